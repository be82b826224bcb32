"""EvalStop (arXiv 2606.04145): stop a job after k consecutive eval-score declines.

A decline is a score below the previous one by more than `min_delta`; any other eval resets the
count. The first `warmup` evals are only recorded, never counted (early evals are the noisiest
relative to the trend and a fresh run may dip before it climbs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.stopping.base import StopRule, warming_up


@dataclass(slots=True)
class _Streak:
    seen: int = 0
    last: float = float("nan")
    declines: int = 0


class EvalStop(StopRule):
    name = "evalstop"

    def __init__(
        self,
        k: int = 3,
        min_delta: float = 0.0,
        warmup: int = 2,
        job_kinds: Iterable[str] = ("rlhf",),
    ) -> None:
        super().__init__(job_kinds)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if min_delta < 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta}")
        if warmup < 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.k, self.min_delta, self.warmup = k, min_delta, warmup

    def new_state(self) -> _Streak:
        return _Streak()

    def decide(self, state: _Streak, event: EvalEvent) -> Decision:
        state.seen += 1
        declined = event.score < state.last - self.min_delta
        state.last = event.score
        if state.seen <= self.warmup:
            return CONTINUE
        state.declines = state.declines + 1 if declined else 0
        if state.declines >= self.k:
            return Decision(True, f"{self.k} consecutive eval declines")
        return CONTINUE

    def explain(self, job_id: str) -> str:
        state = self._state.get(job_id)
        if state is None:
            return super().explain(job_id)
        if state.seen <= self.warmup:
            return warming_up(state.seen, self.warmup)
        return f"continue: {state.declines} of k={self.k} consecutive declines"
