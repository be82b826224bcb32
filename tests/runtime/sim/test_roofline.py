"""The shipped profiles are exactly the datasheet derivation, and the derivation checks by hand."""

from __future__ import annotations

import pytest

from rlguard.runtime.policies.profiles import MEASURED_DIR, load_profile, shipped_profiles
from rlguard.runtime.sim.hardware import L40S, QWEN25_7B, QWEN25_32B
from rlguard.runtime.sim.roofline import SHIPPED, Assumptions, derive_profile, tensor_parallel


def test_every_shipped_profile_is_its_derivation() -> None:
    """Every shipped profile but those measured on a GPU (profiles/measured/)."""
    measured = {p.name.removesuffix(".yaml") for p in MEASURED_DIR.iterdir()}
    assert measured and set(shipped_profiles()) - measured == set(SHIPPED)
    for name, (model, gpu) in SHIPPED.items():
        assert load_profile(name) == derive_profile(name, model, gpu)[0], name


def test_qwen_7b_on_l40s_by_hand() -> None:
    profile, derivation, about = derive_profile("x", QWEN25_7B, L40S)
    assert QWEN25_7B.kv_bytes_per_token == 2 * 28 * 4 * 128 * 2 == 57344
    assert profile.gpus_per_actor == 1
    # weights 15.22 GB read at 0.75 x 864 GB/s
    assert profile.decode_s_per_step == pytest.approx(15.22e9 / 648e9, rel=1e-3)
    assert profile.decode_s_per_context_token == pytest.approx(57344 / 648e9, rel=1e-3)
    # 0.6 x 48 GB - 15.22 GB of weights - 2 GB of activations, in 57344-byte tokens
    assert profile.kv_capacity_tokens == int((28.8e9 - 15.22e9 - 2e9) // 57344)
    assert profile.train_s_per_token == pytest.approx(6 * 7.61e9 / (362e12 * 0.35), rel=1e-3)
    assert set(derivation) == set(vars(profile)) - {"name"}
    assert "57344 B" in about["model"]


def test_tensor_parallel_leaves_a_quarter_of_the_budget_for_kv() -> None:
    a = Assumptions()
    assert tensor_parallel(QWEN25_7B, L40S, a) == 1
    assert tensor_parallel(QWEN25_32B, L40S, a) == 4  # 32.5 GB at TP 2 > 0.75 x 28.8 GB
    roomier = Assumptions(gpu_memory_utilization=0.95)
    assert tensor_parallel(QWEN25_32B, L40S, roomier) == 2
