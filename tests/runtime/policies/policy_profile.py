"""A small hand-checkable time profile the policy tests share (no KV term, no compute floor)."""

from __future__ import annotations

from rlguard.runtime.policies.profiles import TimeProfile

PROFILE = TimeProfile(
    name="t",
    prefill_s_per_token=0.0,
    decode_s_per_step=0.02,
    decode_s_per_seq=0.001,
    score_s_per_token=0.0,
    train_s_per_token=0.0,
    cold_start_s=10.0,
    max_batch=4,
    gpus_per_actor=2,
)
