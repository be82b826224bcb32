"""SLAQ: new jobs first, then the largest predicted normalized loss reduction per GPU-second."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.curves import SaturatingCurve
from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.slaq import Slaq
from rlguard.cluster.scheduler import Scheduler

NAN = float("nan")


def loss_view(make_view, **columns):
    """Jobs with loss history: first/prev/last losses, the executed time of the last two evals."""
    columns.setdefault("loss_prev_exec_s", 100.0)
    columns.setdefault("loss_last_exec_s", 200.0)
    columns.setdefault("running", True)
    return make_view(now=1000.0, **columns)


def test_defaults() -> None:
    policy = Slaq()
    assert (policy.name, policy.preemptive, policy.tick_s) == ("slaq", True, 300.0)
    with pytest.raises(ValueError):
        Slaq(tick_s=0.0)


def test_rate_is_normalized_drop_per_gpu_second(make_view) -> None:
    view = loss_view(
        make_view,
        gpus=[1, 2, 1, 1],
        evals_seen=5,
        loss_first=[2.0, 4.0, 1.0, 1.0],
        loss_prev=[1.5, 3.0, 1.0, 1.0],
        loss_last=[1.3, 2.0, 1.1, 1.0],
    )
    # (1.5 - 1.3) / 2 / 100 / 1;  (3 - 2) / 4 / 100 / 2;  loss rose;  plateau
    np.testing.assert_allclose(Slaq().rate(view), [0.001, 0.00125, -0.001, 0.0])


def test_larger_reduction_runs_first(make_view, order) -> None:
    view = loss_view(
        make_view,
        gpus=[1, 2, 1, 1],
        evals_seen=5,
        submit_s=[0.0, 1.0, 2.0, 3.0],
        loss_first=[2.0, 4.0, 1.0, 1.0],
        loss_prev=[1.5, 3.0, 1.0, 1.0],
        loss_last=[1.3, 2.0, 1.1, 1.0],
    )
    assert order(Slaq(), view) == [1, 0, 3, 2]


def test_same_drop_counts_less_on_more_gpus_or_a_larger_loss_scale(make_view, order) -> None:
    view = loss_view(
        make_view,
        gpus=[4, 1, 1],
        evals_seen=3,
        submit_s=[0.0, 1.0, 2.0],
        loss_first=[1.0, 10.0, 1.0],
        loss_prev=0.9,
        loss_last=0.8,
    )
    # 0.1 / 1 / 100 / 4 = 2.5e-4;  0.1 / 10 / 100 = 1e-4;  0.1 / 1 / 100 = 1e-3
    assert order(Slaq(), view) == [2, 0, 1]


def test_new_jobs_first_fifo_among_them(make_view, order) -> None:
    view = loss_view(
        make_view,
        gpus=1,
        submit_s=[0.0, 1.0, 2.0, 3.0],
        evals_seen=[4, 1, 4, 0],
        loss_first=[2.0, 2.0, 2.0, NAN],
        loss_prev=[1.0, NAN, 1.5, NAN],
        loss_last=[0.5, 2.0, 1.4, NAN],
        loss_prev_exec_s=[100.0, 0.0, 100.0, 0.0],
        loss_last_exec_s=[200.0, 50.0, 200.0, 0.0],
        running=[True, True, False, False],
    )
    assert Slaq().rate(view)[[1, 3]].tolist() == [np.inf, np.inf]
    assert order(Slaq(), view) == [1, 3, 0, 2]


def test_unusable_history_gives_rate_zero_not_nan(make_view) -> None:
    view = loss_view(
        make_view,
        gpus=1,
        evals_seen=3,
        loss_first=[0.0, 1.0, NAN, -2.0],
        loss_prev=[0.5, 0.5, 0.5, -2.5],
        loss_last=[0.4, 0.4, 0.4, -3.0],
        loss_prev_exec_s=[100.0, 200.0, 100.0, 100.0],
        loss_last_exec_s=200.0,
    )
    rate = Slaq().rate(view)
    # zero first loss, zero interval and NaN first loss: no rate; a negative loss scale: |.|
    np.testing.assert_allclose(rate, [0.0, 0.0, 0.0, 0.5 / 2.0 / 100.0])
    assert np.all(np.isfinite(Slaq().priority(view)[:4]))


def test_engine_new_job_preempts_then_the_learning_job_wins_back(make_job, make_workload):
    # A: 8 GPUs, 1000 s, 10 evals (every 100 s), steadily falling loss.
    # B: 8 GPUs, 1000 s, 10 evals, flat loss (rate 0), arrives at 250.
    workload = make_workload(
        make_job(
            "A",
            gpus=8,
            submit_s=0.0,
            duration_s=1000.0,
            n_evals=10,
            loss=SaturatingCurve(3.0, 0.0, 10.0),
        ),
        make_job(
            "B",
            gpus=8,
            submit_s=250.0,
            duration_s=1000.0,
            n_evals=10,
            loss=SaturatingCurve(1.0, 1.0, 1.0),
        ),
    )
    result = Engine(workload, Scheduler(Slaq()), gpus=8, restore_s=0.0).run()
    # B arrives at 250 and waits for the scheduling round at 300: B is new (no losses yet), so it
    # preempts A (A at 30%). Tick 600: B has losses from 400 and 500 with rate 0; A's rate > 0:
    # A preempts B (B at 30%), then runs its last 700 s to 1300; B resumes and ends at 2000.
    np.testing.assert_allclose(result.finish_s, [1300.0, 2000.0])
    assert result.preemptions.tolist() == [1, 1]
