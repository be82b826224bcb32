"""Scoring and training time: compute-bound, data parallel over every GPU the phase holds.

Both executors run these phases on all GPUs (verl balances the tokens across ranks with
Karmarkar-Karp; we assume perfect balance), so their GPU-seconds are the same on both sides and
the runtimes differ only in generation, in cold starts and in what idle time is billed.
"""

from __future__ import annotations

from rlguard.runtime.profiles import TimeProfile
from rlguard.runtime.sim.setups import PASSES, Setup
from rlguard.runtime.sim.workload import StepBatch


def scoring_s(batch: StepBatch, profile: TimeProfile, setup: Setup) -> float:
    passes = PASSES[setup.algorithm]["score"]
    return passes * batch.sequence_tokens() * profile.score_s_per_token / setup.n_gpus


def training_s(batch: StepBatch, profile: TimeProfile, setup: Setup) -> float:
    passes = PASSES[setup.algorithm]["train"]
    return passes * batch.sequence_tokens() * profile.train_s_per_token / setup.n_gpus
