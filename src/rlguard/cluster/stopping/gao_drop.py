"""GaoDrop, GaoTrend's successor: stop when the score now is significantly below its best so far.

Why: a platform cares whether a run is now worse than the checkpoint it already has (the one
keep-best delivers), not whether its curve is still sloping down. GaoTrend tests the slope at the
current progress; GaoDrop tests the fall from the best, read in two ways, and stops on either:

- trend: Gao et al.'s RL form score(p) = a0 + a1 p - a2 p ln p (see gao_trend.py) is fitted to
  the whole history; the fall is the fitted score at the latest eval minus the fitted score at
  the eval where the fit peaks. The whole history votes, so this is the test with power on
  smooth turnovers. One-sided t-test at `alpha`, n - 3 degrees of freedom.
- break: a run that crashes and then creeps back up is not Gao-shaped, and the misfit inflates
  the trend fit's noise estimate until the trend test goes blind. So the history is also split
  at the best eval so far, a line is fitted to each side (at least `after_best` evals after the
  best), and the fall is the after-line at the latest eval minus the before-line at the best
  eval. One-sided t-test at `break_alpha`, n - 4 degrees of freedom.

Both read the noise from their own fit's residuals (no noise level is assumed or configured) and
keep per-job state only. The split is chosen by the data (the best eval is the highest of many
noisy ones), so `break_alpha` is a threshold, not the break test's false-alarm rate. The levels,
`warmup` and `after_best` were chosen on tuning seeds 5000-5039 only, by a rule fixed before
(`benchmarks/tune_gao_drop.py`; docs/cluster.md, "GaoDrop").
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.stopping.contrast import contrast_t, critical_t
from rlguard.cluster.stopping.gao_trend import FitRule, History, gao_design


class GaoDrop(FitRule):
    name = "gao-drop"

    def __init__(
        self,
        alpha: float = 0.01,
        break_alpha: float = 0.01,
        warmup: int = 9,
        after_best: int = 4,
        job_kinds: Iterable[str] = ("rlhf",),
    ) -> None:
        super().__init__(job_kinds)
        for label, level in (("alpha", alpha), ("break_alpha", break_alpha)):
            if not 0 < level < 1:
                raise ValueError(f"{label} must be in (0, 1), got {level}")
        if after_best < 2:
            raise ValueError(f"after_best must be >= 2 (a line after the best), got {after_best}")
        if warmup < after_best + 3:
            raise ValueError(
                f"warmup must be >= after_best + 3 (two evals up to the best, {after_best} after "
                f"it and a residual), got {warmup}"
            )
        self.alpha, self.break_alpha = alpha, break_alpha
        self.warmup, self.after_best = warmup, after_best

    def decide(self, state: History, event: EvalEvent) -> Decision:
        n = state.add(event)
        if n < self.warmup:
            return CONTINUE
        progress, scores = np.asarray(state.progress), np.asarray(state.scores)
        t = trend_drop_t(progress, scores)
        if t < -critical_t(self.alpha, n - 3):
            return Decision(True, f"Gao fit fell from its best (t={t:.2f}, alpha={self.alpha})")
        t = break_drop_t(progress, scores, self.after_best)
        if t < -critical_t(self.break_alpha, n - 4):
            return Decision(
                True, f"score fell after its best eval (t={t:.2f}, alpha={self.break_alpha})"
            )
        return CONTINUE

    def saw(self, progress: np.ndarray, scores: np.ndarray) -> str:
        n = len(scores)
        trend = trend_drop_t(progress, scores)
        fell = break_drop_t(progress, scores, self.after_best)
        return (
            f"fall from the Gao fit's best t={trend:.2f} (stops below "
            f"{-critical_t(self.alpha, n - 3):.2f}), after the best eval t={fell:.2f} (below "
            f"{-critical_t(self.break_alpha, n - 4):.2f})"
        )


def trend_drop_t(progress: np.ndarray, scores: np.ndarray) -> float:
    """t of the Gao fit's value at the last eval minus its value at the eval where it peaks."""
    design = gao_design(progress)
    coef, *_ = np.linalg.lstsq(design, scores, rcond=None)
    peak = int(np.argmax(design @ coef))
    return contrast_t(design, scores, design[-1] - design[peak])


def break_drop_t(progress: np.ndarray, scores: np.ndarray, after_best: int) -> float:
    """t of the fall after the best eval: a line after it, at the last eval, minus a line up to
    it, at the best eval. 0 when there are fewer than two evals up to the best or fewer than
    `after_best` after it."""
    best = int(np.argmax(scores))
    if best < 1 or len(scores) - 1 - best < after_best:
        return 0.0
    before = np.arange(len(scores)) <= best
    design = np.column_stack([before, before * progress, ~before, ~before * progress]).astype(float)
    contrast = np.array([-1.0, -progress[best], 1.0, progress[-1]])
    return contrast_t(design, scores, contrast)
