"""SRTF-Est: least remaining estimated GPU-time first, with estimate doubling on overrun."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.srtf import SrtfEst, remaining_estimate, revised_estimate
from rlguard.cluster.scheduler import Scheduler


def test_remaining_gpu_time_orders_jobs(make_view, order) -> None:
    # remaining x GPUs: 90 * 1 = 90, 40 * 4 = 160, 100 * 2 = 200
    view = make_view(
        gpus=[4, 2, 1],
        estimate_s=[100.0, 100.0, 100.0],
        executed_s=[60.0, 0.0, 10.0],
        running=[True, False, True],
        submit_s=[0.0, 1.0, 2.0],
        now=100.0,
    )
    assert SrtfEst().priority(view).tolist() == [160.0, 200.0, 90.0]
    assert order(SrtfEst(), view) == [2, 0, 1]
    # Unweighted: remaining seconds only (40 < 90 < 100).
    assert order(SrtfEst(weight_by_gpus=False), view) == [0, 2, 1]


@pytest.mark.parametrize(
    ("estimate", "executed", "revised"),
    [
        (100.0, 0.0, 100.0),
        (100.0, 99.0, 100.0),
        (100.0, 100.0, 200.0),  # reaching the estimate counts as outliving it
        (100.0, 150.0, 200.0),
        (100.0, 250.0, 400.0),  # floor(log2 2.5) + 1 = 2 doublings
        (100.0, 400.0, 800.0),
        (0.0, 5.0, 8.0),  # a zero estimate is read as 1 s, then doubled past 5 s
    ],
)
def test_overrun_doubles_the_estimate_until_it_is_ahead(make_view, estimate, executed, revised):
    view = make_view(estimate_s=[estimate], executed_s=[executed])
    assert revised_estimate(view).tolist() == [revised]
    assert remaining_estimate(view).tolist() == [revised - executed]


def test_overrunning_job_does_not_jump_the_queue(make_view, order) -> None:
    # Job 0 has run 150 s on an estimate of 100: revised 200, 50 s left, not -50.
    view = make_view(
        gpus=[1, 1],
        estimate_s=[100.0, 30.0],
        executed_s=[150.0, 0.0],
        running=[True, False],
        submit_s=[0.0, 10.0],
        now=160.0,
    )
    assert order(SrtfEst(), view) == [1, 0]


def test_remaining_is_positive_and_finite_for_any_overrun(make_view) -> None:
    executed = np.array([0.0, 1.0, 1.5, 2.0, 3.9999999, 4.0, 1e6, 123456.789])
    view = make_view(estimate_s=1.0, executed_s=executed)
    remaining = remaining_estimate(view)
    assert np.all(np.isfinite(remaining)) and np.all(remaining > 0)


def test_engine_preemption_order_with_overrun(make_job, make_workload) -> None:
    # A (true 200 s) estimated 50 s. At 60 B arrives with 30 s: without doubling A would read
    # -10 s left and keep the GPUs; doubled to 100 s it has 40 s left, so B (30) preempts it.
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=200.0, estimate_s=50.0),
        make_job("B", gpus=8, submit_s=60.0, duration_s=30.0),
    )
    result = Engine(workload, Scheduler(SrtfEst()), gpus=8, restore_s=0.0).run()
    # B runs 60-90; A resumes at 90 with 140 s of work left.
    np.testing.assert_allclose(result.finish_s, [230.0, 90.0])
    assert result.preemptions.tolist() == [1, 0]


def test_engine_resume_pays_the_restore_overhead(make_job, make_workload) -> None:
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=100.0),
        make_job("B", gpus=8, submit_s=10.0, duration_s=20.0),
    )
    result = Engine(workload, Scheduler(SrtfEst()), gpus=8, restore_s=60.0).run()
    # B (20 s) preempts A (90 s left) at 10 and ends at 30; A restores 30-90, then runs 90 s.
    np.testing.assert_allclose(result.finish_s, [180.0, 30.0])
    np.testing.assert_allclose(result.executed_s, [10.0 + 150.0, 20.0])
