"""Tiresias discretized 2D-LAS: queues by attained GPU-service, FIFO inside, promotion."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.tiresias import Tiresias
from rlguard.cluster.scheduler import Scheduler


def test_defaults() -> None:
    policy = Tiresias()
    assert policy.name == "tiresias"
    assert policy.preemptive is True
    assert policy.tick_s == 300.0
    assert policy.thresholds.tolist() == [3250.0, 7200.0, 18000.0]
    assert policy.promote_knob == 8.0


@pytest.mark.parametrize(
    ("attained", "queue"),
    [(0.0, 0), (3249.0, 0), (3250.0, 1), (7199.0, 1), (7200.0, 2), (18000.0, 3), (1e9, 3)],
)
def test_queue_of_attained_gpu_seconds(make_view, attained, queue) -> None:
    view = make_view(gpus=[2], executed_s=[attained / 2], running=[True], now=1e4)
    assert Tiresias().priority(view).tolist() == [float(queue)]


def test_job_past_first_threshold_is_demoted_below_a_fresh_one(make_view, order) -> None:
    # Job 0 (8 GPUs x 500 s = 4000 GPU-s) submitted first, job 1 fresh: job 1 runs first.
    view = make_view(
        gpus=[8, 8],
        submit_s=[0.0, 600.0],
        executed_s=[500.0, 0.0],
        running=[True, False],
        pending_since_s=[0.0, 600.0],
        now=600.0,
    )
    assert order(Tiresias(), view) == [1, 0]


def test_attained_service_is_gpus_times_time(make_view, order) -> None:
    # 400 s on 1 GPU (400 GPU-s) stays on top; 400 s on 16 GPUs (6400 GPU-s) is demoted.
    view = make_view(gpus=[16, 1], submit_s=[0.0, 1.0], executed_s=400.0, running=True, now=500.0)
    assert order(Tiresias(), view) == [1, 0]


def test_fifo_within_a_queue_not_least_attained(make_view, order) -> None:
    # All in queue 1 (3250 <= attained < 7200): submission order decides, not attained service.
    view = make_view(
        gpus=1,
        submit_s=[30.0, 10.0, 20.0],
        executed_s=[3300.0, 7000.0, 5000.0],
        running=[False, True, False],
        pending_since_s=[9000.0, 0.0, 9000.0],
        now=9100.0,
    )
    assert Tiresias().priority(view).tolist() == [1.0, 1.0, 1.0]
    assert order(Tiresias(), view) == [1, 2, 0]


def starving_view(make_view, waiting: float, **over):
    """Job 0: 1 GPU, ran 4000 s (queue 1), pending `waiting` s; job 1: fresh, submitted later."""
    now = 50_000.0
    columns = dict(
        gpus=[1, 1],
        submit_s=[0.0, 40_000.0],
        executed_s=[4000.0, 0.0],
        running=[False, False],
        pending_since_s=[now - waiting, 40_000.0],
    )
    columns.update(over)
    return make_view(now=now, **columns)


def test_starving_job_is_promoted_to_the_top_queue(make_view, order) -> None:
    view = starving_view(make_view, waiting=32_001.0)  # > 8 x 4000
    assert Tiresias().priority(view).tolist() == [0.0, 0.0]
    assert order(Tiresias(), view) == [0, 1]  # top queue, and older


def test_no_promotion_until_the_wait_exceeds_knob_times_executed(make_view, order) -> None:
    view = starving_view(make_view, waiting=32_000.0)  # equal is not "exceeds"
    assert order(Tiresias(), view) == [1, 0]
    assert order(Tiresias(promote_knob=7.9), view) == [0, 1]


def test_promotion_is_off_with_an_infinite_knob(make_view, order) -> None:
    view = starving_view(make_view, waiting=1e9)
    assert order(Tiresias(promote_knob=float("inf")), view) == [1, 0]


def test_promotion_resets_service_until_another_quantum(make_view) -> None:
    policy = Tiresias()
    assert policy.priority(starving_view(make_view, waiting=32_001.0)).tolist() == [0.0, 0.0]
    # Later the promoted job runs: 1000 s since promotion (1000 GPU-s) keeps it in queue 0,
    # though its total attained service (5000) alone would put it in queue 1.
    later = dict(now=60_000.0, executed_s=[5000.0, 0.0], running=[True, False])
    view = make_view(gpus=[1, 1], submit_s=[0.0, 40_000.0], pending_since_s=0.0, **later)
    assert policy.priority(view).tolist() == [0.0, 0.0]
    assert Tiresias().priority(view).tolist() == [1.0, 0.0]  # a fresh policy has no record
    # 3250 GPU-s after promotion it is demoted again.
    view = make_view(
        gpus=[1, 1],
        submit_s=[0.0, 40_000.0],
        running=[True, False],
        executed_s=[7250.0, 0.0],
        now=63_000.0,
    )
    assert policy.priority(view).tolist() == [1.0, 0.0]


def test_running_and_top_queue_jobs_are_not_promoted(make_view) -> None:
    policy = Tiresias(promote_knob=1.0)
    view = make_view(
        gpus=1,
        executed_s=[4000.0, 100.0],
        running=[True, False],
        pending_since_s=0.0,
        now=1e6,
    )
    assert policy.priority(view).tolist() == [1.0, 0.0]
    assert policy._rows.size == 0  # no record: nothing to reset


def test_records_are_dropped_for_jobs_gone_or_rows_reused(make_view) -> None:
    policy = Tiresias()
    policy.priority(starving_view(make_view, waiting=40_000.0))
    assert policy._rows.tolist() == [0]
    # Row 0 now holds another job (other submit time): its record does not apply and is dropped.
    reused = make_view(
        gpus=1, submit_s=[45_000.0], executed_s=[4000.0], running=[True], now=55_000.0
    )
    assert policy.priority(reused).tolist() == [1.0]
    assert policy._rows.size == 0
    # A job that left the view loses its record.
    policy.priority(starving_view(make_view, waiting=40_000.0))
    policy.priority(make_view(gpus=1, submit_s=[0.0, 40_000.0], rows=[1], now=55_000.0))
    assert policy._rows.size == 0


def test_a_new_run_clears_the_records(make_view) -> None:
    policy = Tiresias()
    policy.priority(starving_view(make_view, waiting=40_000.0))
    assert policy._rows.size == 1
    policy.priority(make_view(gpus=1, executed_s=[4000.0], running=[True], now=10.0))
    assert policy._rows.size == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thresholds": [3250.0, 3250.0]},
        {"thresholds": [0.0, 100.0]},
        {"thresholds": [float("nan")]},
        {"promote_knob": 0.0},
        {"promote_knob": float("nan")},
        {"tick_s": 0.0},
    ],
)
def test_invalid_arguments(kwargs) -> None:
    with pytest.raises(ValueError):
        Tiresias(**kwargs)


def test_engine_demotion_lets_a_fresh_job_preempt(make_job, make_workload) -> None:
    # A (8 GPUs) passes 3250 GPU-s at 406.25 s. B arrives at 100: same queue, A is older, so B
    # waits. The tick at 600 sees A in queue 1: B preempts it, runs 600-800; A resumes 800-1200.
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=1000.0),
        make_job("B", gpus=8, submit_s=100.0, duration_s=200.0),
    )
    result = Engine(workload, Scheduler(Tiresias()), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [1200.0, 800.0])
    assert result.preemptions.tolist() == [1, 0]


def promotion_run(make_job, make_workload, policy: Tiresias):
    # Thresholds [1000] GPU-s, knob 0.5, ticks every 10 s. A (8 GPUs, 400 s) is in queue 1 from
    # 125 s; B (8 GPUs, 120 s = 960 GPU-s, queue 0 all its life) arrives at 150 and preempts it.
    workload = make_workload(
        make_job("A", gpus=8, submit_s=0.0, duration_s=400.0),
        make_job("B", gpus=8, submit_s=150.0, duration_s=120.0),
    )
    return Engine(workload, Scheduler(policy), gpus=8, restore_s=0.0).run()


def test_engine_starvation_promotion_with_service_reset(make_job, make_workload) -> None:
    result = promotion_run(make_job, make_workload, Tiresias([1000.0], 0.5, tick_s=10.0))
    # A waits 150-230 (80 > 0.5 x 150): promoted, it preempts B (both queue 0, A older) at 230.
    # Reset, it keeps queue 0 for 1000 GPU-s (125 s): demoted at 355, B preempts it at tick 360
    # and finishes its last 40 s at 400; A finishes its last 120 s at 520.
    np.testing.assert_allclose(result.finish_s, [520.0, 400.0])
    assert result.preemptions.tolist() == [2, 1]


def test_engine_without_promotion_the_young_job_keeps_the_node(make_job, make_workload) -> None:
    result = promotion_run(make_job, make_workload, Tiresias([1000.0], float("inf"), tick_s=10.0))
    # B runs 150-270 unpreempted; A resumes at 270 with 250 s left.
    np.testing.assert_allclose(result.finish_s, [520.0, 270.0])
    assert result.preemptions.tolist() == [1, 0]
