"""Small batches and profiles for simulator tests (hand-checkable times)."""

from __future__ import annotations

import dataclasses

import numpy as np

from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.workload import LengthModel, TokenBatch


def profile(
    max_batch: int = 8,
    prefill: float = 0.0,
    per_seq: float = 0.001,
    per_context: float = 0.0,
    compute: float = 0.0,
    kv: int | None = None,
) -> TimeProfile:
    return TimeProfile(
        name="test",
        prefill_s_per_token=prefill,
        decode_s_per_step=0.01,
        decode_s_per_seq=per_seq,
        score_s_per_token=1e-4,
        train_s_per_token=4e-4,
        cold_start_s=2.0,
        max_batch=max_batch,
        gpus_per_actor=1,
        decode_s_per_context_token=per_context,
        decode_compute_s_per_seq=compute,
        kv_capacity_tokens=kv,
    )


def batch(lengths: list[list[int]], prompt: int = 10, prefix: int = 0) -> TokenBatch:
    groups = len(lengths)
    return TokenBatch(
        [str(i) for i in range(groups)],
        np.full(groups, prompt),
        prefix,
        np.asarray(lengths, dtype=int),
    )


SMALL = Setup(
    name="small",
    n_gpus=4,
    profile="test",
    prompts_per_step=32,
    k=4,
    workload=LengthModel(dataset_prompts=64, max_response=256, response_median=40),
    measure_steps=2,
)
"""4 GPUs, 32 prompts of 4 samples: a step the executors' tests can afford to simulate often."""
SMALL_PROFILE = dataclasses.replace(profile(max_batch=16, prefill=1e-4), cold_start_s=0.5)
