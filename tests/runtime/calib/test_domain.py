"""The calibration's domain: read from the runs the fit uses, and what of a job lies outside it."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.coefficients import EngineArgs
from rlguard.runtime.calib.domain import Domain, outside, shipped_domain
from rlguard.runtime.calib.measured import read_measured
from rlguard.runtime.sim.hardware import model_spec

EAGER, GRAPHS = EngineArgs(enforce_eager=True), EngineArgs(enforce_eager=False)


def test_the_shipped_domain_is_the_fitted_runs():
    domain = shipped_domain()
    fitted = [row for row in read_measured() if not row.held_out]
    assert domain.gpus == ("h100", "h20", "l20")
    assert domain.min_params == model_spec("qwen2.5-0.5b", "model").params
    assert domain.max_params == model_spec("qwen2.5-32b", "model").params
    assert domain.eager_only and all(row.enforce_eager for row in fitted)


def test_a_job_like_the_calibrations_runs_is_inside():
    assert outside(shipped_domain(), "qwen2.5-7b", "H100", EAGER) == []


@pytest.mark.parametrize(
    ("model", "gpu", "engine", "field"),
    [
        ("qwen2.5-7b", "a100", EAGER, "gpu 'a100'"),
        ("qwen2.5-72b", "h100", EAGER, "model 'qwen2.5-72b': 72.7B parameters"),
        ("qwen2.5-7b", "h100", GRAPHS, "engine.enforce_eager false"),
    ],
)
def test_each_part_outside_is_named(model, gpu, engine, field):
    (note,) = outside(shipped_domain(), model, gpu, engine)
    assert note.startswith(field)


def test_the_domain_follows_the_runs_not_a_list():
    # a calibration that had measured A100s with CUDA graphs would not flag either
    domain = Domain(gpus=("a100",), min_params=1e9, max_params=8e9, eager_only=False)
    assert outside(domain, "qwen2.5-7b", "a100", GRAPHS) == []
    assert len(outside(domain, "qwen2.5-0.5b", "h100", GRAPHS)) == 2
