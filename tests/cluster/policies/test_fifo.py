"""FIFO: submission order, never preempts; free GPUs are backfilled by later jobs that fit."""

from __future__ import annotations

import numpy as np

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.fifo import Fifo
from rlguard.cluster.scheduler import Scheduler


def test_orders_by_submit_time_whatever_the_size(make_view, order) -> None:
    view = make_view(
        submit_s=[30.0, 10.0, 20.0],
        gpus=[1, 8, 2],
        estimate_s=[10.0, 1e5, 50.0],
        executed_s=[0.0, 500.0, 0.0],
        running=[False, True, False],
    )
    assert order(Fifo(), view) == [1, 2, 0]


def test_equal_submit_times_fall_back_to_row(make_view, order) -> None:
    view = make_view(submit_s=[5.0, 5.0, 5.0], gpus=[4, 1, 2], rows=[2, 0, 1])
    assert order(Fifo(), view) == [1, 2, 0]  # rows 0, 1, 2


def test_is_not_preemptive_and_needs_no_tick() -> None:
    assert Fifo.preemptive is False
    assert Fifo().tick_s is None


def test_engine_backfills_but_never_preempts(make_job, make_workload) -> None:
    # A (4 GPUs) runs from 0; B (8) must wait for the whole node; C (4), submitted after B, fits
    # the 4 free GPUs and backfills at once; B starts only when A leaves at 100.
    workload = make_workload(
        make_job("A", gpus=4, submit_s=0.0, duration_s=100.0),
        make_job("B", gpus=8, submit_s=10.0, duration_s=50.0),
        make_job("C", gpus=4, submit_s=20.0, duration_s=30.0),
    )
    result = Engine(workload, Scheduler(Fifo()), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [100.0, 150.0, 50.0])
    assert result.preemptions.tolist() == [0, 0, 0]
