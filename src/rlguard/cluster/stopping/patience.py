"""Patience early stopping: the convention users already know from Keras, Lightning and HF.

Keras `EarlyStopping`, Lightning `EarlyStopping` and HF `EarlyStoppingCallback` all count
evaluations with no improvement over the best score by more than `min_delta` and stop once that
count reaches `patience`; an improvement resets the count (REFERENCE.md §2). It is the baseline
EvalStop is measured against: EvalStop counts *consecutive declines* against the previous eval,
patience counts *non-improvements* against the best so far.

Semantics of `Patience` (per job, per eval, on the watched job kinds only):

- The first `warmup` evals are ignored entirely: they neither set the best nor count (as Keras's
  `start_from_epoch`; early evals are the noisiest relative to the trend).
- An eval improves when its value is above the best by more than `min_delta` (strictly:
  `value > best + min_delta`). An improvement becomes the new best and resets the count to 0.
  The first counted eval always improves (the best starts at -inf).
- Any other eval (a tie, a decline, or a rise of at most `min_delta`) adds 1 to the count and
  leaves the best unchanged. The job is stopped at the eval where the count reaches `patience`.

`EmaPatience` runs exactly that logic on an exponential moving average of the score instead of the
raw score: ema_1 = score_1, ema_t = alpha * score_t + (1 - alpha) * ema_{t-1}. The EMA is updated
on every eval, warm-up included, so warm-up still initialises the smoothing. alpha = 1 is plain
`Patience`. This is the "smoothing" noise-robustness users ask for (REFERENCE.md §2).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.stopping.base import StopRule, warming_up


@dataclass(slots=True)
class _PatienceState:
    seen: int = 0
    best: float = -math.inf
    wait: int = 0


@dataclass(slots=True)
class _EmaPatienceState(_PatienceState):
    ema: float = math.nan


class Patience(StopRule):
    name = "patience"

    def __init__(
        self,
        patience: int = 5,
        min_delta: float = 0.0,
        warmup: int = 0,
        job_kinds: Iterable[str] = ("rlhf",),
    ) -> None:
        super().__init__(job_kinds)
        if not patience >= 1:
            raise ValueError(f"patience must be >= 1, got {patience}")
        if not min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta}")
        if not warmup >= 0:
            raise ValueError(f"warmup must be >= 0, got {warmup}")
        self.patience, self.min_delta, self.warmup = patience, min_delta, warmup

    def new_state(self) -> _PatienceState:
        return _PatienceState()

    def value(self, state: _PatienceState, event: EvalEvent) -> float:
        """The quantity patience is counted on; subclasses transform the score here."""
        return event.score

    def decide(self, state: _PatienceState, event: EvalEvent) -> Decision:
        value = self.value(state, event)
        state.seen += 1
        if state.seen <= self.warmup:
            return CONTINUE
        if value > state.best + self.min_delta:
            state.best, state.wait = value, 0
            return CONTINUE
        state.wait += 1
        if state.wait >= self.patience:
            return Decision(True, f"no improvement in {self.patience} evals")
        return CONTINUE

    def explain(self, job_id: str) -> str:
        state = self._state.get(job_id)
        if state is None:
            return super().explain(job_id)
        if state.seen <= self.warmup:
            return warming_up(state.seen, self.warmup)
        return f"continue: {state.wait} of patience={self.patience} evals without a new best"


class EmaPatience(Patience):
    name = "ema-patience"

    def __init__(
        self,
        patience: int = 5,
        min_delta: float = 0.0,
        warmup: int = 0,
        alpha: float = 0.3,
        job_kinds: Iterable[str] = ("rlhf",),
    ) -> None:
        super().__init__(patience, min_delta, warmup, job_kinds)
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        self.alpha = alpha

    def new_state(self) -> _EmaPatienceState:
        return _EmaPatienceState()

    def value(self, state: _EmaPatienceState, event: EvalEvent) -> float:
        if math.isnan(state.ema):
            state.ema = event.score
        else:
            state.ema = self.alpha * event.score + (1 - self.alpha) * state.ema
        return state.ema
