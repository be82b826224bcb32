"""One local Ray (2 CPUs, no dashboard) per test module, a tiny saved policy for the functions to
load, and the shared workload as group requests (the driver's single torch thread and the tokenizer
come from tests/runtime/conftest.py)."""

from __future__ import annotations

import logging

import pytest
import ray
from ray_workload import BUDGETS, PROMPTS, K

from rlguard.runtime.generation.generator import GroupRequest
from tiny_models import tiny_causal_lm


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        address="local",  # a new cluster, never one found on the host
        num_cpus=2,
        include_dashboard=False,
        logging_level=logging.ERROR,
        log_to_driver=False,
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory, tokenizer):
    path = tmp_path_factory.mktemp("policy")
    tiny_causal_lm(tokenizer, seed=0, hidden_size=32).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def varied_groups(tokenizer) -> list[GroupRequest]:
    return [
        GroupRequest(i, tokenizer(p, add_special_tokens=False)["input_ids"], K, budget, 1.0, 11)
        for i, (p, budget) in enumerate(zip(PROMPTS, BUDGETS, strict=True))
    ]
