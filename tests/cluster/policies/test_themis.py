"""Themis finish-time fairness: the job with the worst rho = T_shared / T_isolated runs first."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.themis import Themis
from rlguard.cluster.scheduler import Scheduler


def test_defaults() -> None:
    policy = Themis()
    assert (policy.name, policy.preemptive, policy.tick_s) == ("themis", True, 300.0)
    with pytest.raises(ValueError):
        Themis(tick_s=-1.0)


def three_jobs(make_view):
    return make_view(
        now=500.0,
        capacity=8,
        gpus=[8, 1, 2],
        submit_s=[0.0, 400.0, 300.0],
        estimate_s=[1000.0, 100.0, 200.0],
        executed_s=[400.0, 0.0, 250.0],
        running=[True, False, False],
        pending_since_s=[0.0, 400.0, 450.0],
    )


def test_rho_by_hand(make_view) -> None:
    # N = 3 on 8 GPUs.
    # job 0: shared 500 + 600 = 1100; isolated 1000 x max(1, 3 x 8 / 8) = 3000
    # job 1: shared 100 + 100 = 200;   isolated 100 x max(1, 3 / 8) = 100
    # job 2: overran its 200 s (revised 400, 150 left): shared 200 + 150; isolated 400
    np.testing.assert_allclose(Themis().rho(three_jobs(make_view)), [1100 / 3000, 2.0, 350 / 400])


def test_worst_rho_runs_first(make_view, order) -> None:
    assert order(Themis(), three_jobs(make_view)) == [1, 2, 0]


def test_long_waiting_long_job_beats_short_fresh_one(make_view, order) -> None:
    # Unlike SRTF: a 10000 s job that has waited 5000 s (rho 1.5) goes before a fresh 10 s job.
    view = make_view(
        now=5000.0,
        capacity=8,
        gpus=1,
        submit_s=[0.0, 5000.0],
        estimate_s=[10_000.0, 10.0],
        pending_since_s=[0.0, 5000.0],
    )
    np.testing.assert_allclose(Themis().rho(view), [1.5, 1.0])
    assert order(Themis(), view) == [0, 1]


def test_share_smaller_than_the_job_slows_its_isolated_time(make_view) -> None:
    # Same 8-GPU job, fresh: alone with one other job on 16 GPUs its share fits (rho 1); among
    # four jobs its 1/4 share is 4 GPUs, isolated time doubles and rho halves.
    pair = make_view(now=0.0, capacity=16, gpus=[8, 1], estimate_s=100.0)
    four = make_view(now=0.0, capacity=16, gpus=[8, 1, 1, 1], estimate_s=100.0)
    assert Themis().rho(pair)[0] == pytest.approx(1.0)
    assert Themis().rho(four)[0] == pytest.approx(0.5)


def test_zero_estimates_stay_finite(make_view) -> None:
    view = make_view(now=100.0, estimate_s=[0.0, 0.0], executed_s=[0.0, 50.0])
    assert np.all(np.isfinite(Themis().priority(view)))


def test_engine_rho_ping_pong(make_job, make_workload) -> None:
    # A: 8 GPUs, 1000 s. B: 8 GPUs, 2000 s, arrives at 10. N = 2, so isolated = 2 x estimate.
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=1000.0),
        make_job("B", gpus=8, submit_s=10.0, duration_s=2000.0),
    )
    result = Engine(workload, Scheduler(Themis()), gpus=8, restore_s=0.0).run()
    # 10: both rho 0.5, A is older and keeps running.
    # 300: B (290 + 2000) / 4000 = 0.5725 > A's 0.5: B preempts A (A 300 done).
    # 600: A (600 + 700) / 2000 = 0.65 > B's 0.5725: A preempts B (B 300 done).
    # 900: B 2590 / 4000 = 0.6475 < 0.65: no change.  1200: B 2890 / 4000 = 0.7225: B preempts A,
    # 100 s short of its end.  1500: A (1500 + 100) / 2000 = 0.8: A preempts B (B 600 done) and
    # ends at 1600; B resumes with 1400 s left and ends at 3000.
    np.testing.assert_allclose(result.finish_s, [1600.0, 3000.0])
    assert result.preemptions.tolist() == [2, 2]
