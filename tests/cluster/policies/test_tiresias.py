"""Tiresias 2D-LAS as its simulator runs it: queues by attained GPU-service, running jobs first
inside a queue, preemption only by jobs ahead (higher queues), starvation promotion optional."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.tiresias import Tiresias
from rlguard.cluster.scheduler import Scheduler

EVENT_DRIVEN = {"tick_s": None}


def test_defaults_are_the_simulators_dlas_gpu_with_our_rounds() -> None:
    policy = Tiresias()
    assert policy.name == "tiresias"
    assert policy.preemptive is True and policy.backfill is True
    assert policy.thresholds.tolist() == [3250.0, 7200.0]  # three queues
    assert policy.promote_knob == 0.0  # dlas-gpu: no promotion
    assert policy.tick_s == 300.0
    assert Tiresias(**EVENT_DRIVEN).tick_s is None


@pytest.mark.parametrize(
    ("attained", "below_a_fresh_job"),
    [(0.0, False), (3249.0, False), (3250.0, True), (7200.0, True), (1e9, True)],
)
def test_a_job_sinks_once_its_gpu_seconds_reach_the_threshold(
    make_view, order, attained, below_a_fresh_job
) -> None:
    # Job 0 (2 GPUs, submitted first) has attained `attained` GPU-s; job 1 is fresh.
    view = make_view(
        gpus=[2, 1],
        submit_s=[0.0, 5.0],
        executed_s=[attained / 2, 0.0],
        running=[True, False],
        now=1e9,
    )
    assert order(Tiresias(), view) == ([1, 0] if below_a_fresh_job else [0, 1])


def test_demoted_jobs_join_the_next_queue_in_the_order_they_crossed(make_view, order) -> None:
    # Job 0 (1 GPU, 3300 GPU-s) crossed 3250 at now - 50; job 1 (2 GPUs, 3400 GPU-s), submitted
    # later, crossed at now - 75: it is ahead of job 0 in queue 1. Job 2 is fresh (queue 0).
    view = make_view(
        gpus=[1, 2, 1],
        submit_s=[0.0, 10.0, 20.0],
        executed_s=[3300.0, 1700.0, 0.0],
        running=[True, True, False],
        now=10_000.0,
    )
    assert order(Tiresias(), view) == [2, 1, 0]


def test_next_change_is_the_next_threshold_crossing(make_view) -> None:
    view = make_view(gpus=[8, 1], executed_s=[100.0, 0.0], running=[True, False], now=500.0)
    policy = Tiresias()
    policy.priority(view)
    assert policy.next_change_s(view) == pytest.approx(500.0 + (3250.0 - 800.0) / 8)
    waiting_only = make_view(gpus=[1], running=[False], now=500.0)
    assert Tiresias().next_change_s(waiting_only) is None


def test_running_job_keeps_its_gpus_against_an_older_job_of_its_queue(
    make_job, make_workload
) -> None:
    # X (4 GPUs) runs 0-200. A (8 GPUs, at 10) cannot fit; B (4 GPUs, at 20) backfills the free
    # four. When X leaves, A is older than B and in the same queue (B: 4 x 300 = 1200 GPU-s), but
    # B runs: no preemption inside a queue. A starts when B leaves at 320.
    workload = make_workload(
        make_job("X", gpus=4, submit_s=0.0, duration_s=200.0),
        make_job("A", gpus=8, submit_s=10.0, duration_s=100.0),
        make_job("B", gpus=4, submit_s=20.0, duration_s=300.0),
    )
    result = Engine(workload, Scheduler(Tiresias(**EVENT_DRIVEN)), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [200.0, 420.0, 320.0])
    assert result.preemptions.tolist() == [0, 0, 0]


def demotion_workload(make_job, make_workload):
    # A (8 GPUs) passes 3250 GPU-s at 406.25 s. B arrives at 100: same queue, A runs, B waits.
    return make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=1000.0),
        make_job("B", gpus=8, submit_s=100.0, duration_s=200.0),
    )


def test_event_driven_demotion_lets_a_top_queue_job_preempt_at_once(
    make_job, make_workload
) -> None:
    # At the crossing (a wake-up the policy asked for) A sinks and B preempts it: B runs
    # 406.25-606.25, A resumes with 593.75 s left.
    workload = demotion_workload(make_job, make_workload)
    result = Engine(workload, Scheduler(Tiresias(**EVENT_DRIVEN)), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [1200.0, 606.25])
    assert result.preemptions.tolist() == [1, 0]


def test_with_rounds_the_preemption_waits_for_the_round(make_job, make_workload) -> None:
    # Rounds every 300 s from the first submission: B preempts A at 600 and runs 600-800.
    workload = demotion_workload(make_job, make_workload)
    result = Engine(workload, Scheduler(Tiresias()), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [1200.0, 800.0])
    assert result.preemptions.tolist() == [1, 0]


def promotion_run(make_job, make_workload, promote_knob: float):
    # Thresholds [1000] GPU-s, event-driven. A (8 GPUs, 400 s) is in queue 1 from 125 s;
    # B (8 GPUs, 120 s = 960 GPU-s, queue 0 all its life) arrives at 150 and preempts it;
    # C (8 GPUs, 100 s) arrives at 240.
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=400.0),
        make_job("B", gpus=8, submit_s=150.0, duration_s=120.0),
        make_job("C", gpus=8, submit_s=240.0, duration_s=100.0),
    )
    policy = Tiresias([1000.0], promote_knob=promote_knob, tick_s=None)
    return Engine(workload, Scheduler(policy), gpus=8, restore_s=0.0).run()


def test_promotion_puts_a_starving_job_behind_the_running_ones(make_job, make_workload) -> None:
    result = promotion_run(make_job, make_workload, promote_knob=0.5)
    # A has waited 75 s (0.5 x its 150 s) at 225: promoted to the end of queue 0, behind B,
    # which keeps running, and ahead of C (arrives later). A runs from 270 with its service
    # reset; at 395 (1000 GPU-s later) it sinks and C preempts it (395-495); A ends at 620.
    np.testing.assert_allclose(result.finish_s, [620.0, 270.0, 495.0])
    assert result.preemptions.tolist() == [2, 0, 0]


def test_without_promotion_the_later_top_queue_job_goes_first(make_job, make_workload) -> None:
    result = promotion_run(make_job, make_workload, promote_knob=0.0)
    # C (queue 0) runs 270-370 before A (queue 1), which resumes at 370.
    np.testing.assert_allclose(result.finish_s, [620.0, 270.0, 370.0])
    assert result.preemptions.tolist() == [1, 0, 0]


def test_a_policy_reused_for_a_new_run_starts_afresh(make_job, make_workload) -> None:
    workload = demotion_workload(make_job, make_workload)
    policy = Tiresias(**EVENT_DRIVEN)
    first = Engine(workload, Scheduler(policy), gpus=8, restore_s=0.0).run()
    again = Engine(workload, Scheduler(policy), gpus=8, restore_s=0.0).run()
    np.testing.assert_array_equal(first.finish_s, again.finish_s)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thresholds": [3250.0, 3250.0]},
        {"thresholds": [0.0, 100.0]},
        {"thresholds": [float("nan")]},
        {"thresholds": [float("inf")]},
        {"promote_knob": -1.0},
        {"promote_knob": float("nan")},
        {"tick_s": 0.0},
        {"queues": 3},
    ],
)
def test_invalid_arguments(kwargs) -> None:
    with pytest.raises(ValueError):
        Tiresias(**kwargs)
