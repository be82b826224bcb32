"""Jobs as numpy columns, in blocks: the form a stream of a million jobs takes.

A `Workload` holds one `JobSpec` and one `JobTruth` object per job, which is fine for a few
thousand jobs and far too heavy (gigabytes, and seconds to build) for a month of a large cluster.
A `JobStream` yields `JobBlock`s instead: runs of consecutive jobs in submission order, one row
per job, their eval observations as 2-D arrays padded to the stream's `width`. The engine pulls
blocks as the simulated clock reaches them, so a generator or trace reader behind a stream never
holds more than a block of per-eval data at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from rlguard.cluster.jobs import Workload


@dataclass(frozen=True)
class JobBlock:
    """Consecutive jobs as columns. Eval arrays are (jobs, width); entries past `n_evals` are
    padding. `proxies` holds NaN where `has_proxy` is False (jobs without a proxy reward)."""

    job_ids: list[str]
    kinds: list[str]
    gpus: np.ndarray
    submit_s: np.ndarray
    estimate_s: np.ndarray
    n_evals: np.ndarray
    duration_s: np.ndarray
    scores: np.ndarray  # observed (noisy) eval scores
    losses: np.ndarray  # observed training losses
    proxies: np.ndarray  # observed proxy rewards
    has_proxy: np.ndarray
    true_scores: np.ndarray
    hacking: np.ndarray

    def __len__(self) -> int:
        return len(self.job_ids)

    def take(self, rows: np.ndarray | slice) -> JobBlock:
        """The block's jobs at `rows` (indices, in that order, or a slice)."""
        picked = {}
        for f in fields(self):
            column = getattr(self, f.name)
            if isinstance(column, list) and not isinstance(rows, slice):
                picked[f.name] = [column[r] for r in rows]
            else:
                picked[f.name] = column[rows]
        return JobBlock(**picked)

    @staticmethod
    def concat(blocks: Sequence[JobBlock], width: int) -> JobBlock:
        """One block of all jobs in `blocks`, eval arrays padded to `width`."""
        joined = {}
        for f in fields(JobBlock):
            parts = [getattr(b, f.name) for b in blocks]
            if isinstance(parts[0], list):
                joined[f.name] = [x for part in parts for x in part]
            elif parts[0].ndim == 2:
                joined[f.name] = np.concatenate([_pad(p, width) for p in parts])
            else:
                joined[f.name] = np.concatenate(parts)
        return JobBlock(**joined)


def _pad(values: np.ndarray, width: int) -> np.ndarray:
    if values.shape[1] == width:
        return values
    out = np.zeros((len(values), width), dtype=values.dtype)
    out[:, : values.shape[1]] = values
    return out


@dataclass(frozen=True)
class JobStream:
    """`n_jobs` jobs in submission order (submit times never decrease), as blocks.

    `width` bounds every job's eval count. `order`, when set, maps each stream row back to the
    index of the job in the input it came from (a workload given out of submission order), so a
    run's results can be reported in the input's order.
    """

    blocks: Iterable[JobBlock]
    n_jobs: int
    width: int
    name: str = "stream"
    order: np.ndarray | None = None


def block_of(workload: Workload) -> JobBlock:
    """The workload's jobs as one block, in the workload's order."""
    specs, truths = workload.specs, workload.truths
    width = max((s.n_evals for s in specs), default=1)
    n = len(specs)
    scores, losses, true = (np.zeros((n, width)) for _ in range(3))
    proxies = np.full((n, width), np.nan)
    has_proxy = np.zeros(n, dtype=bool)
    for row, truth in enumerate(truths):
        m = len(truth.observed_scores)
        scores[row, :m] = truth.observed_scores
        losses[row, :m] = truth.observed_losses
        true[row, :m] = truth.true_scores
        if truth.observed_proxies is not None:
            proxies[row, :m] = truth.observed_proxies
            has_proxy[row] = True
    return JobBlock(
        job_ids=[s.job_id for s in specs],
        kinds=[str(s.kind) for s in specs],
        gpus=np.array([s.gpus for s in specs], dtype=np.int64),
        submit_s=np.array([s.submit_s for s in specs], dtype=float),
        estimate_s=np.array([s.estimate_s for s in specs], dtype=float),
        n_evals=np.array([s.n_evals for s in specs], dtype=np.int64),
        duration_s=np.array([t.duration_s for t in truths], dtype=float),
        scores=scores,
        losses=losses,
        proxies=proxies,
        has_proxy=has_proxy,
        true_scores=true,
        hacking=np.array([t.hacking for t in truths], dtype=bool),
    )


def submission_order(submit_s: np.ndarray) -> np.ndarray | None:
    """The stable sort of jobs by submit time (ties keep their order); None if already sorted."""
    order = np.argsort(submit_s, kind="stable")
    return None if np.array_equal(order, np.arange(len(order))) else order


def split(block: JobBlock, size: int) -> list[JobBlock]:
    """The block cut into consecutive blocks of `size` jobs (the last may be shorter)."""
    return [block.take(slice(lo, lo + size)) for lo in range(0, len(block), size)]


def stream_of(workload: Workload) -> JobStream:
    """A materialized workload as a one-block stream, sorted by submit time if it was not (its
    permutation is kept, to report results in the workload's order)."""
    block = block_of(workload)
    order = submission_order(block.submit_s)
    if order is not None:
        block = block.take(order)
    return JobStream([block], len(block), block.scores.shape[1], workload.name, order)
