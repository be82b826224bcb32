"""Scoring and training time: compute-bound, data parallel over every GPU the phase holds.

Both executors run these phases on all GPUs (verl balances the tokens across ranks with
Karmarkar-Karp; we assume perfect balance), so their GPU-seconds are the same on both sides and
the runtimes differ only in generation, in cold starts, in what idle time is billed, and in how
much scoring the serverless executor hides behind the generation tail (sim/tail.py).
"""

from __future__ import annotations

import numpy as np

from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.workload import TokenBatch


def group_scoring_gpu_s(batch: TokenBatch, profile: TimeProfile, setup: Setup) -> np.ndarray:
    """(groups,) GPU-seconds to score each group: every scoring pass over its tokens (padded
    where the model keeps padding), plus each pass's micro-batch overhead on the real ones."""
    real = setup.scoring_passes() * batch.group_tokens()
    computed = setup.pass_tokens(batch, training=False)
    return computed * profile.score_s_per_token + real * profile.score_micro_s_per_token


def scoring_s(batch: TokenBatch, profile: TimeProfile, setup: Setup) -> float:
    """Wall seconds: the passes' GPU-seconds spread over every GPU, plus each pass's fixed cost
    (loading offloaded weights, launching the workers)."""
    passes = setup.scoring_passes()
    spread = float(group_scoring_gpu_s(batch, profile, setup).sum()) / setup.n_gpus
    return spread + passes * profile.score_s_per_pass


def training_s(batch: TokenBatch, profile: TimeProfile, setup: Setup) -> float:
    passes = setup.training_passes()
    computed = float(setup.pass_tokens(batch, training=True).sum()) * profile.train_s_per_token
    real = passes * batch.sequence_tokens() * profile.train_micro_s_per_token
    return (computed + real) / setup.n_gpus + passes * profile.train_s_per_update
