"""GaoTrend, our detector: a one-sided test that the eval curve has turned over, under Gao's law.

Why: EvalStop's k consecutive declines reads each noisy eval once and forgets; under noise a
healthy run produces chance declines and a hacking run's decline is broken by chance rises.
Gao et al. (2023) found that gold reward under RL follows R(d) = d (alpha - beta ln d) with
d = sqrt(KL), and d grows roughly linearly with training progress p. Substituting d = c p gives
score(p) = a0 + a1 p - a2 p ln p, which is linear in its coefficients. So at each eval we fit it
by least squares to the whole history, estimate the noise from the residuals (no noise level is
assumed), and stop when the fitted slope at the current progress, a1 - a2 (ln p + 1), is below
zero at one-sided significance `alpha` (a t-test with n - 3 degrees of freedom). All evals vote,
with their noise measured rather than guessed.

Limits: the test trusts the Gao shape; a curve that is flat then collapses late (not Gao-like)
is caught later than by a local rule. `warmup` evals are needed before the fit is trusted.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.stopping.base import StopRule, warming_up
from rlguard.cluster.stopping.contrast import contrast_t, critical_t


@dataclass(slots=True)
class History:
    """A job's evals so far, in order: what the trend rules fit."""

    progress: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)

    def add(self, event: EvalEvent) -> int:
        """Record the eval; returns how many the job has had."""
        self.progress.append(event.progress)
        self.scores.append(event.score)
        return len(self.scores)


class FitRule(StopRule):
    """A rule that fits a job's whole history once it has `warmup` evals (the trend rules)."""

    warmup: int

    def new_state(self) -> History:
        return History()

    def explain(self, job_id: str) -> str:
        state = self._state.get(job_id)
        if state is None:
            return super().explain(job_id)
        n = len(state.scores)
        if n < self.warmup:
            return warming_up(n, self.warmup - 1)
        return "continue: " + self.saw(np.asarray(state.progress), np.asarray(state.scores))

    @abstractmethod
    def saw(self, progress: np.ndarray, scores: np.ndarray) -> str:
        """What the fit shows, in words, for a history it did not stop."""


class GaoTrend(FitRule):
    name = "gao-trend"

    def __init__(
        self, alpha: float = 0.01, warmup: int = 8, job_kinds: Iterable[str] = ("rlhf",)
    ) -> None:
        super().__init__(job_kinds)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if warmup < 4:
            raise ValueError(
                f"warmup must be >= 4 (three coefficients and a residual), got {warmup}"
            )
        self.alpha, self.warmup = alpha, warmup

    def decide(self, state: History, event: EvalEvent) -> Decision:
        n = state.add(event)
        if n < self.warmup:
            return CONTINUE
        t = slope_t_statistic(np.asarray(state.progress), np.asarray(state.scores))
        if t < -critical_t(self.alpha, n - 3):
            return Decision(True, f"Gao-fit slope below zero (t={t:.2f}, alpha={self.alpha})")
        return CONTINUE

    def saw(self, progress: np.ndarray, scores: np.ndarray) -> str:
        t = slope_t_statistic(progress, scores)
        return (
            f"Gao-fit slope t={t:.2f}, stops below {-critical_t(self.alpha, len(scores) - 3):.2f}"
        )


def gao_design(progress: np.ndarray) -> np.ndarray:
    """Columns 1, p, -p ln p: Gao's RL form with d = c p, linear in its coefficients."""
    # p ln p -> 0 as p -> 0: an eval at progress 0 (before training) is a valid point
    p_log_p = progress * np.log(np.where(progress > 0, progress, 1.0))
    return np.column_stack([np.ones_like(progress), progress, -p_log_p])


def slope_t_statistic(progress: np.ndarray, scores: np.ndarray) -> float:
    """t statistic of the fitted slope of a0 + a1 p - a2 p ln p at the last progress point."""
    gradient = np.array([0.0, 1.0, -(np.log(progress[-1]) + 1.0)])
    return contrast_t(gao_design(progress), scores, gradient)
