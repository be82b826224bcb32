"""The workload the Ray tests share: groups whose lengths differ by their token budgets."""

from __future__ import annotations

from rlguard.runtime.policies.profiles import TimeProfile

K = 4
# distinct first tokens: no prefix is shared, so deduplication saves exactly the K-fold repeats
PROMPTS = [
    "Question: what is 2 + 3? ",
    "Write a function that adds two numbers. ",
    "Answer yes or no. ",
    "Is the response safe? ",
]
BUDGETS = [20, 4, 20, 4]  # long and short groups alternate: equal-count splits mix them


def cpu_profile() -> TimeProfile:
    """A CPU tiny-Llama profile of the order benchmarks/bench_profile.py measures."""
    return TimeProfile(
        name="tiny-cpu",
        prefill_s_per_token=1e-4,
        decode_s_per_step=3e-3,
        decode_s_per_seq=3e-4,
        score_s_per_token=1e-4,
        train_s_per_token=2e-4,
        cold_start_s=5.0,
        max_batch=8,
        gpus_per_actor=1,
    )
