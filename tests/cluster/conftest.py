"""Shared builders for cluster tests: a hand-made ClusterView and tiny hand-made workloads.

Exposed as fixtures (`make_view`, `order`, `make_job`, `make_workload`) so test modules in
sub-folders use them without import-path tricks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from rlguard.cluster.curves import SaturatingCurve
from rlguard.cluster.jobs import JobKind, JobSpec, JobTruth, Workload
from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView, VisibleTable

_TABLE_COLUMNS = (
    "gpus",
    "submit_s",
    "estimate_s",
    "executed_s",
    "run_start_s",
    "running",
    "pending_since_s",
    "evals_seen",
    "last_progress",
    "loss_first",
    "loss_last",
    "loss_prev",
    "loss_last_exec_s",
    "loss_prev_exec_s",
)


def build_view(
    *,
    now: float = 0.0,
    capacity: int = 8,
    rows: Sequence[int] | None = None,
    **columns: Sequence[float] | float,
) -> ClusterView:
    """A ClusterView over a VisibleTable filled by hand, one entry per job.

    Columns are VisibleTable fields (lists, or scalars broadcast to every job); unset ones keep the
    table's defaults, except that a running job's open segment starts at `now` unless `run_start_s`
    is given (so `executed_s` is what it reads back). `rows` picks and orders the table rows in the
    view (default: all of them, in order).
    """
    unknown = set(columns) - set(_TABLE_COLUMNS)
    if unknown:
        raise TypeError(f"not VisibleTable columns: {sorted(unknown)}")
    n = max((len(v) for v in columns.values() if np.ndim(v)), default=1)
    table = VisibleTable(n)
    table.job_ids[:] = [f"job-{i}" for i in range(n)]
    table.run_start_s[:] = now
    for name, value in columns.items():
        getattr(table, name)[:] = value
    picked = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    return ClusterView(table, picked, now, capacity)


def run_order(policy: Policy, view: ClusterView) -> list[int]:
    """View positions in the order the engine would run them (its lexsort on key, submit, row)."""
    keys = policy.priority(view)
    assert keys.shape == (len(view),)
    assert not np.isnan(keys).any()
    return np.lexsort((view.rows, view.submit_s, keys)).tolist()


def build_job(
    job_id: str,
    *,
    gpus: int,
    submit_s: float,
    duration_s: float,
    estimate_s: float | None = None,
    n_evals: int = 1,
    loss: SaturatingCurve | None = None,
    kind: JobKind = JobKind.LORA_SFT,
) -> tuple[JobSpec, JobTruth]:
    """One job with noiseless evals; the estimate defaults to the true duration."""
    spec = JobSpec(
        job_id, kind, gpus, submit_s, duration_s if estimate_s is None else estimate_s, n_evals
    )
    truth = JobTruth(
        duration_s=duration_s,
        eval_curve=SaturatingCurve(0.3, 0.5, 0.2),
        loss_curve=loss or SaturatingCurve(2.0, 1.0, 0.3),
        eval_noise=np.zeros(n_evals),
        loss_noise=np.zeros(n_evals),
    )
    return spec, truth


def build_workload(*jobs: tuple[JobSpec, JobTruth], name: str = "tiny") -> Workload:
    """A workload of the given (spec, truth) pairs, in the order given (submission order)."""
    return Workload([spec for spec, _ in jobs], [truth for _, truth in jobs], name=name)


@pytest.fixture
def make_view():
    return build_view


@pytest.fixture
def order():
    return run_order


@pytest.fixture
def make_job():
    return build_job


@pytest.fixture
def make_workload():
    return build_workload
