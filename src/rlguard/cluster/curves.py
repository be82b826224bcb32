"""Curves of a job's quantities over training progress p in [0, 1].

Eval scores follow Gao et al. 2023 (arXiv 2210.10760): for RL the gold reward is
R(d) = d (alpha - beta ln d) with d = sqrt(KL), and d grows roughly linearly with progress when KL
grows quadratically with steps. The curve peaks at d* = exp(alpha / beta - 1) with R* = beta d*.
A run whose KL budget d_max exceeds d* turns over inside its horizon: it hacks.

Measured curves (MeasuredCurve, read from a curve file by rlguard.cluster.curve_file) replace the
Gao form with scores measured in real training, linearly interpolated between their points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def gao_rl(d: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """Gao's RL gold reward R(d) = d (alpha - beta ln d), with R(0) = 0."""
    d = np.asarray(d, dtype=float)
    safe = np.where(d > 0, d, 1.0)
    return np.where(d > 0, d * (alpha - beta * np.log(safe)), 0.0)


@dataclass(frozen=True, slots=True)
class GaoCurve:
    """An RLHF eval-score curve: s0 + scale * R(d_max * p), scaled so the peak gain is `gain`."""

    alpha: float
    beta: float
    d_max: float
    s0: float
    gain: float

    @property
    def d_star(self) -> float:
        return float(np.exp(self.alpha / self.beta - 1.0))

    @property
    def hacks(self) -> bool:
        """True when the curve turns over inside the run's horizon (d_max beyond the peak)."""
        return self.d_max > self.d_star

    def __call__(self, p: np.ndarray) -> np.ndarray:
        r_star = self.beta * self.d_star
        raw = (
            self.s0 + self.gain * gao_rl(self.d_max * np.asarray(p), self.alpha, self.beta) / r_star
        )
        return np.clip(raw, 0.0, 1.0)

    def proxy_reward(self, p: np.ndarray, slope: float, r0: float = 0.0) -> np.ndarray:
        """Proxy reward: keeps rising roughly linearly in d (Gao et al., Fig. 1), hacking or not."""
        return r0 + slope * self.d_max * np.asarray(p)


@dataclass(frozen=True, slots=True)
class SaturatingCurve:
    """A curve that moves from `start` towards `end` as 1 - exp(-p / tau): eval of SFT/DPO jobs."""

    start: float
    end: float
    tau: float

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return self.end + (self.start - self.end) * np.exp(-np.asarray(p) / self.tau)


HACKING_DROP = 0.2
"""A measured run hacks when its score ends this share of its gain (peak - start) below its peak."""


def turns_over(score: Sequence[float], drop: float = HACKING_DROP) -> bool:
    """The derived label: the score rose, then fell from its peak by >= `drop` of that gain.

    A score that never rises above its start has no gain to lose and is not labelled hacking.
    The 1e-9 slack keeps a fall of exactly `drop` (as written in decimals) on the hacking side.
    """
    start, peak, final = score[0], max(score), score[-1]
    gain = peak - start
    return gain > 0 and peak - final >= drop * gain - 1e-9


@dataclass(frozen=True, slots=True)
class MeasuredCurve:
    """An eval curve measured in real training (a curve file entry), replayed by interpolation.

    Sequences are stored as tuples of floats, so curves compare and hash by value. `hacking` is the
    file's label; None means "derive it from the score" (see `turns_over`).
    """

    name: str
    method: str
    seed: int
    progress: tuple[float, ...]
    score: tuple[float, ...]
    proxy: tuple[float, ...] | None = None
    kl: tuple[float, ...] | None = None
    hacking: bool | None = None

    def __post_init__(self) -> None:
        for name in ("progress", "score", "proxy", "kl"):
            values = getattr(self, name)
            if values is not None:
                object.__setattr__(self, name, tuple(float(v) for v in values))

    @property
    def hacks(self) -> bool:
        return turns_over(self.score) if self.hacking is None else self.hacking

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return np.clip(np.interp(p, self.progress, self.score), 0.0, 1.0)

    def proxy_reward(self, p: np.ndarray, slope: float) -> np.ndarray:
        """The measured proxy reward at p; if none, one rising linearly in p (Gao Fig. 1)."""
        if self.proxy is None:
            return slope * np.asarray(p, dtype=float)
        return np.interp(p, self.progress, self.proxy)
