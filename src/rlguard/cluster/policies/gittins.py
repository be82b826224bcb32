"""Gittins index over attained GPU-service (Tiresias' Gittins variant; Gittins 1979).

With job sizes S (GPU-seconds) drawn from a distribution learned from history, a job that has
attained a GPU-seconds gets the index

    G(a) = P(S - a <= D | S > a) / E[min(S - a, D) | S > a],

its chance of finishing within the next quantum D per GPU-second it is expected to use in that
quantum; the highest index runs first. Like LAS it needs no per-job estimate, but it exploits the
shape of the size distribution: where most jobs are about to finish it favours them, where the tail
is heavy it behaves like LAS. The empirical distribution makes G a step function of a, computed for
all jobs at once from the sorted samples, their prefix sums and two `np.searchsorted` calls.

Beyond history: a job that has attained at least the largest sample (S > a holds for no sample)
has an undefined G. It is given the lowest index (as in the Tiresias simulator, which ranks it 0):
it runs after every job inside the history, and among such jobs the one with the least attained
service goes first (LAS, which is what a Gittins index reduces to on a heavy tail).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from importlib.resources import as_file, files

import numpy as np

from rlguard.cluster.policies.base import Policy
from rlguard.cluster.view import ClusterView
from rlguard.errors import InputError

DEFAULT_QUANTUM = 3250.0
"""The quantum D in GPU-seconds: Tiresias' first queue threshold (REFERENCE.md section 3)."""

_USED_FLOOR = 1e-9

PACKAGED_HISTORY = ("data", "tiresias_yarn_gput1000.csv")
"""Tiresias' YARN GPU-time samples (simulator/yarn-gput1000.csv, Apache-2.0), in the package."""


class Gittins(Policy):
    name = "gittins"
    preemptive = True

    def __init__(
        self, history: Sequence[float], quantum: float = DEFAULT_QUANTUM, tick_s: float = 300.0
    ) -> None:
        sizes = np.sort(np.asarray(history, dtype=float).ravel())
        if not sizes.size:
            raise ValueError("history must hold at least one job size")
        if not np.all(np.isfinite(sizes)) or sizes[0] < 0:
            raise ValueError("history sizes must be finite GPU-seconds >= 0")
        if not quantum > 0:
            raise ValueError(f"quantum must be > 0, got {quantum}")
        if not tick_s > 0:
            raise ValueError(f"tick_s must be > 0, got {tick_s}")
        self.sizes = sizes
        self.quantum = float(quantum)
        self.tick_s = float(tick_s)
        self._prefix = np.concatenate([[0.0], np.cumsum(sizes)])

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], **kwargs: float) -> Gittins:
        """A Gittins policy learned from a one-column CSV of job sizes, header `duration`."""
        try:
            with open(path, encoding="utf-8-sig", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"{os.fspath(path)}: cannot read job sizes: {err}") from None
        return cls(_parse_sizes(text, os.fspath(path)), **kwargs)

    @classmethod
    def default(cls, **kwargs: float) -> Gittins:
        """Learned from the packaged Tiresias YARN samples (GPU-seconds)."""
        with as_file(files("rlguard.cluster").joinpath(*PACKAGED_HISTORY)) as path:
            return cls.from_csv(path, **kwargs)

    def index(self, attained: np.ndarray) -> np.ndarray:
        """G(a) for each attained service a; NaN where a is beyond every sample."""
        a = np.asarray(attained, dtype=float)
        sizes, prefix, n = self.sizes, self._prefix, len(self.sizes)
        i = np.searchsorted(sizes, a, side="right")  # samples with S <= a
        j = np.searchsorted(sizes, a + self.quantum, side="right")  # samples with S <= a + D
        done = j - i  # samples finishing within the quantum: a < S <= a + D
        # Sum over S > a of min(S - a, D); the common factor 1 / #(S > a) cancels out of G.
        used = (prefix[j] - prefix[i]) - done * a + self.quantum * (n - j)
        # Exactly > 0 whenever some S > a; the floor only absorbs prefix-sum rounding for a job
        # a hair below the largest sizes (G is then huge: it is about to finish, run it).
        used = np.maximum(used, _USED_FLOOR * self.quantum)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(i < n, done / used, np.nan)

    def priority(self, view: ClusterView) -> np.ndarray:
        attained = view.attained_gpu_s
        g = self.index(attained)
        # Inside history: -G <= 0. Beyond it: a / max(S) >= 1 (or 1 if max(S) is 0), so those
        # jobs go last, least attained first.
        beyond = attained / self.sizes[-1] if self.sizes[-1] > 0 else np.ones(len(attained))
        return np.where(np.isnan(g), beyond, -g)


def _parse_sizes(text: str, where: str) -> np.ndarray:
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows or [c.strip() for c in rows[0]] != ["duration"]:
        raise InputError(f"{where}: line 1: expected the single header 'duration'")
    sizes = []
    for k, row in enumerate(rows[1:], start=1):
        try:
            value = float(row[0]) if len(row) == 1 else float("nan")
        except ValueError:
            value = float("nan")
        if not (np.isfinite(value) and value >= 0):
            raise InputError(f"{where}: size #{k}: not a job size in GPU-seconds: {row!r}")
        sizes.append(value)
    if not sizes:
        raise InputError(f"{where}: no job sizes after the header")
    return np.array(sizes)
