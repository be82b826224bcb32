"""FIFO: submission order, never preempts; `fifo` backfills free GPUs with later jobs that fit,
`fifo-strict` lets the first job that does not fit block the jobs behind it."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.policies.fifo import Fifo, FifoStrict
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


@pytest.mark.parametrize("policy", [Fifo, FifoStrict])
def test_is_not_preemptive_and_needs_no_tick(policy) -> None:
    assert policy.preemptive is False
    assert policy().tick_s is None
    assert policy.backfill is (policy is Fifo)


def blocked_workload(make_job, make_workload):
    # A (4 GPUs) runs from 0; B (8) must wait for the whole node; C (4), submitted after B,
    # would fit the 4 GPUs A leaves free.
    return make_workload(
        make_job("A", gpus=4, submit_s=0.0, duration_s=100.0),
        make_job("B", gpus=8, submit_s=10.0, duration_s=50.0),
        make_job("C", gpus=4, submit_s=20.0, duration_s=30.0),
    )


def test_engine_backfills_but_never_preempts(make_job, make_workload) -> None:
    # C backfills at once; B starts only when A leaves at 100.
    workload = blocked_workload(make_job, make_workload)
    result = Engine(workload, Scheduler(Fifo()), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [100.0, 150.0, 50.0])
    assert result.preemptions.tolist() == [0, 0, 0]


def test_strict_fifo_blocks_behind_the_head_of_the_line(make_job, make_workload) -> None:
    # C waits behind B although 4 GPUs sit idle 20-100: B runs 100-150, then C 150-180.
    workload = blocked_workload(make_job, make_workload)
    result = Engine(workload, Scheduler(FifoStrict()), gpus=8, restore_s=0.0).run()
    np.testing.assert_allclose(result.finish_s, [100.0, 150.0, 180.0])
    assert result.preemptions.tolist() == [0, 0, 0]


def test_strict_fifo_blocks_on_a_job_split_by_fragmentation(make_job, make_workload) -> None:
    # Two nodes of 8: A (6 GPUs) and B (6) take one node each; D (4 GPUs) fits the 4 free GPUs
    # in total but no node holds them: it waits, and E (1 GPU) waits behind it under strict FIFO.
    jobs = [
        make_job("A", gpus=6, submit_s=0.0, duration_s=100.0),
        make_job("B", gpus=6, submit_s=0.0, duration_s=200.0),
        make_job("D", gpus=4, submit_s=10.0, duration_s=10.0),
        make_job("E", gpus=1, submit_s=10.0, duration_s=10.0),
    ]
    strict = Engine(make_workload(*jobs), Scheduler(FifoStrict()), gpus=16).run()
    np.testing.assert_allclose(strict.finish_s, [100.0, 200.0, 110.0, 110.0])
    backfilled = Engine(make_workload(*jobs), Scheduler(Fifo()), gpus=16).run()
    np.testing.assert_allclose(backfilled.finish_s, [100.0, 200.0, 110.0, 20.0])
