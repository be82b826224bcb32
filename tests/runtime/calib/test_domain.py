"""The calibration's domain: read from the runs the fit uses, and what of a job lies outside it."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.domain import Domain, findings, outside, shipped_domain
from rlguard.runtime.calib.job import EngineSettings
from rlguard.runtime.calib.measured import PHASES, read_measured
from rlguard.runtime.sim.hardware import model_spec

EAGER = EngineSettings(enforce_eager=True, vllm_engine="v0")
GRAPHS = EngineSettings(enforce_eager=False, vllm_engine="v0")
V1 = EngineSettings(vllm_engine="v1")


def test_the_shipped_domain_is_the_fitted_runs():
    domain = shipped_domain()
    fitted = [row for row in read_measured() if not row.held_out]
    assert domain.gpus == ("a100", "h100", "h20", "l20")
    assert domain.min_params == model_spec("qwen2.5-0.5b", "model").params
    assert domain.max_params == model_spec("qwen2.5-32b", "model").params
    assert domain.eager_only and all(row.enforce_eager for row in fitted)
    # generation's fitted runs: the LoRA ones, the 0.5B play-verl ones on H100 and the L20
    # Megatron ones on vLLM V0; the FSDP2 run on H20, the 7B play-verl and dstack ones on H100
    # and the Agentic-RAG one on A100 on V1
    assert domain.generation_engines == (
        ("a100", "v1"),
        ("h100", "v0"),
        ("h100", "v1"),
        ("h20", "v1"),
        ("l20", "v0"),
    )


def test_a_job_like_the_calibrations_runs_is_inside():
    assert outside(shipped_domain(), "qwen2.5-7b", "H100", EAGER) == []
    assert outside(shipped_domain(), "qwen2-7b", "h20", V1) == []  # the FSDP2 run's engine
    assert outside(shipped_domain(), "qwen2.5-7b", "h100", V1) == []


@pytest.mark.parametrize(
    ("model", "gpu", "engine", "field"),
    [
        ("qwen2.5-7b", "l40s", EAGER, "gpu 'l40s'"),
        ("qwen2.5-72b", "h100", EAGER, "model 'qwen2.5-72b': 72.7B parameters"),
        ("qwen2.5-7b", "h100", GRAPHS, "engine.enforce_eager false"),
        ("qwen2.5-7b", "h20", EAGER, "engine.vllm_engine 'v0': no run whose generation"),
        ("qwen2.5-7b", "l20", V1, "engine.vllm_engine 'v1'"),
    ],
)
def test_each_part_outside_is_named(model, gpu, engine, field):
    (note,) = outside(shipped_domain(), model, gpu, engine)
    assert note.startswith(field)


def test_the_domain_follows_the_runs_not_a_list():
    # a calibration that had measured A100s with CUDA graphs would not flag either
    domain = Domain(("a100",), 1e9, 8e9, eager_only=False, generation_engines=(("a100", "v0"),))
    assert outside(domain, "qwen2.5-7b", "a100", GRAPHS) == []
    assert len(outside(domain, "qwen2.5-0.5b", "h100", GRAPHS)) == 2


def test_a_finding_names_the_phases_whose_band_it_leaves_unmeasured():
    # a GPU or a model size no run measured leaves every phase; the engine only generation,
    # since the trainer's passes do not run on vLLM
    ((_, phases),) = findings(shipped_domain(), "qwen2.5-7b", "l40s", EAGER)
    assert phases == PHASES
    ((_, phases),) = findings(shipped_domain(), "qwen2.5-72b", "h100", EAGER)
    assert phases == PHASES
    ((_, phases),) = findings(shipped_domain(), "qwen2.5-7b", "h20", EAGER)
    assert phases == ("generation",)
    ((_, phases),) = findings(shipped_domain(), "qwen2.5-7b", "h100", GRAPHS)
    assert phases == ("generation",)
