"""Paired comparisons over seeds: the same workloads run under two schedulers.

Per seed, gain = 1 - treatment / baseline (positive = the treatment is better when lower is better).
We report the mean gain, its 95% t-interval and a two-sided paired t-test p-value on the raw values
(scipy.stats.ttest_rel). Seeds are the unit of replication; jobs within a seed are not independent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def paired_gain(baseline: Sequence[float], treatment: Sequence[float]) -> dict[str, float | None]:
    """Mean relative gain of `treatment` over `baseline` (lower is better), CI and p-value."""
    b = np.asarray(baseline, dtype=float)
    t = np.asarray(treatment, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gains = np.where(b > 0, 1.0 - t / b, 0.0)
    mean = float(gains.mean())
    if len(gains) < 2 or np.allclose(b, t):
        return {"gain": mean, "ci_low": _finite(mean), "ci_high": _finite(mean), "p": None}
    sem = stats.sem(gains)
    low, high = stats.t.interval(0.95, len(gains) - 1, loc=mean, scale=sem) if sem else (mean, mean)
    p = stats.ttest_rel(b, t).pvalue
    return {"gain": mean, "ci_low": _finite(low), "ci_high": _finite(high), "p": _finite(p)}


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean over seeds of a metric that may be undefined on some (e.g. precision with no stops)."""
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None
