"""The calibrated profile prices generation by vLLM's engine generation: each engine's eager
launches and host work, the matmuls split over tensor parallel, the phase switch's parts; a host
factor moves the per-op terms alone."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.coefficients import (
    PER_OP_TERMS,
    Coefficients,
    EngineArgs,
    calibrated_profile,
)
from rlguard.runtime.calib.comm import TrainerSettings
from rlguard.runtime.sim.hardware import gpu_spec, model_spec
from synthetic_steps import TRUTH

MODEL, GPU = model_spec("qwen2.5-7b", "model"), gpu_spec("h100", "gpu")


def profile(tp=1, lora=False, offload=False, c=TRUTH, **engine):
    layout = TrainerSettings(param_offload=offload).layout(8, 64, 5, 400.0)
    return calibrated_profile("t", c, MODEL, GPU, tp, EngineArgs(**engine), layout, lora)


def test_each_engine_generation_pays_its_own_launches_and_host_work() -> None:
    v0, v1 = profile(vllm_engine="v0"), profile(vllm_engine="v1")
    launches = (TRUTH.eager_v0_s_per_layer - TRUTH.eager_v1_s_per_layer) * MODEL.layers
    assert v0.decode_s_per_step - v1.decode_s_per_step == pytest.approx(launches)
    host = TRUTH.host_v0_s_per_seq - TRUTH.host_v1_s_per_seq
    assert v0.decode_s_per_seq - v1.decode_s_per_seq == pytest.approx(host)
    assert v0.prefill_s_per_token == v1.prefill_s_per_token  # the same matmuls


def test_cuda_graphs_drop_the_launches_but_not_the_host_work() -> None:
    eager, graphs = profile(vllm_engine="v0"), profile(vllm_engine="v0", enforce_eager=False)
    launches = TRUTH.eager_v0_s_per_layer * MODEL.layers
    assert eager.decode_s_per_step - graphs.decode_s_per_step == pytest.approx(launches)
    assert graphs.decode_s_per_seq == eager.decode_s_per_seq > TRUTH.host_v0_s_per_seq


def test_tensor_parallel_splits_the_matmuls_not_the_host_work() -> None:
    one, two = profile(tp=1), profile(tp=2)
    matmuls = TRUTH.generation_compute * 2 * MODEL.params / GPU.bf16_flops
    assert one.prefill_s_per_token == pytest.approx(matmuls)
    assert two.prefill_s_per_token == pytest.approx(matmuls / 2)
    assert one.decode_s_per_seq == pytest.approx(TRUTH.host_v1_s_per_seq + matmuls)
    assert two.decode_s_per_seq == pytest.approx(TRUTH.host_v1_s_per_seq + matmuls / 2)


def test_the_phase_switch_adds_lora_per_layer_and_offload() -> None:
    plain = profile().phase_switch_s
    assert plain == pytest.approx(TRUTH.switch_s)
    lora = TRUTH.switch_lora_s_per_layer * MODEL.layers
    assert profile(lora=True).phase_switch_s == pytest.approx(plain + lora)
    assert profile(offload=True).phase_switch_s == pytest.approx(plain + TRUTH.switch_offload_s)


def test_a_host_factor_scales_the_per_op_terms_and_leaves_the_roofline_multipliers() -> None:
    slow = TRUTH.at_host_speed(2.0)
    for name in Coefficients.model_fields:
        expected = 2 * getattr(TRUTH, name) if name in PER_OP_TERMS else getattr(TRUTH, name)
        assert getattr(slow, name) == pytest.approx(expected), name
    assert {"memory", "generation_compute", "forward", "train"}.isdisjoint(PER_OP_TERMS)
    # a decode step: the roofline's share stays, the per-op share doubles
    none, once, twice = (profile(c=TRUTH.at_host_speed(f), vllm_engine="v0") for f in (0, 1, 2))
    per_op = once.decode_s_per_step - none.decode_s_per_step
    assert per_op > 0 and none.decode_s_per_step > 0
    assert twice.decode_s_per_step == pytest.approx(once.decode_s_per_step + per_op)
