"""The calibrated profile prices generation by vLLM's engine generation: each engine's eager
launches and host work, the matmuls split over tensor parallel, the phase switch's parts."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.coefficients import EngineArgs, calibrated_profile
from rlguard.runtime.calib.comm import TrainerSettings
from rlguard.runtime.sim.hardware import gpu_spec, model_spec
from synthetic_steps import TRUTH

MODEL, GPU = model_spec("qwen2.5-7b", "model"), gpu_spec("h100", "gpu")


def profile(tp=1, lora=False, offload=False, **engine):
    layout = TrainerSettings(param_offload=offload).layout(8, 64, 5, 400.0)
    return calibrated_profile("t", TRUTH, MODEL, GPU, tp, EngineArgs(**engine), layout, lora)


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
