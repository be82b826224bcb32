"""The EvalStop paper's two competitor stop rules (arXiv 2606.04145; REFERENCE.md §2).

Only the paper's abstract is public, so it names these competitors and their failure modes but
not their definitions; the semantics below are ours and are chosen to be the simplest rule that
shows each failure mode.

`FixedProgress` ("fixed-progress"): one check at a fixed point of the run. At the first eval
whose progress is >= `at_progress`, the job is stopped unless that eval's score is a new best,
i.e. above the best score of the job's earlier evals by more than `min_delta` (strictly:
`score > best + min_delta`; a tie is not a new best). If that first eval is also the job's first
eval there is nothing to compare with, so it counts as a new best and the job continues. The rule
checks exactly once per job: every later eval continues. (Progress is compared with a 1e-9
tolerance so that k/n progress values land on the fraction they mean.) The engine ends a job at
its last eval without asking the stop rule, so `at_progress = 1` never stops a job there. The
paper reports 65% FPR on healthy RLHF for this competitor: a single noisy comparison at a fixed
point stops healthy runs whose score happened to dip at that eval.

`LossPlateau` ("loss-plateau"): stop when the training loss has plateaued. From the
(`window` + 1)-th eval on, the relative improvement of the loss over the last `window` evals is
(loss[t - window] - loss[t]) / |loss[t - window]|, and the job is stopped when it is below
`rel_tol` (strictly; a loss that rose gives a negative improvement and stops). The training loss
keeps falling while a run reward-hacks (Gao et al. 2023, REFERENCE.md §1), which is why this
competitor misses hacking runs (the paper: over half of them).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.stopping.base import StopRule, warming_up

_PROGRESS_TOL = 1e-9
_TINY = 1e-12


@dataclass(slots=True)
class _FixedProgressState:
    best: float = -math.inf
    checked: bool = False


class FixedProgress(StopRule):
    name = "fixed-progress"

    def __init__(
        self,
        at_progress: float = 0.5,
        min_delta: float = 0.0,
        job_kinds: Iterable[str] = ("rlhf",),
    ) -> None:
        super().__init__(job_kinds)
        if not 0 < at_progress <= 1:
            raise ValueError(f"at_progress must be in (0, 1], got {at_progress}")
        if not min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta}")
        self.at_progress, self.min_delta = at_progress, min_delta

    def new_state(self) -> _FixedProgressState:
        return _FixedProgressState()

    def decide(self, state: _FixedProgressState, event: EvalEvent) -> Decision:
        if state.checked:
            return CONTINUE
        if event.progress < self.at_progress - _PROGRESS_TOL:
            state.best = max(state.best, event.score)
            return CONTINUE
        state.checked = True
        if event.score > state.best + self.min_delta:
            return CONTINUE
        return Decision(True, f"no new best score at progress {event.progress:.2f}")

    def explain(self, job_id: str) -> str:
        state = self._state.get(job_id)
        if state is None:
            return super().explain(job_id)
        if state.checked:
            return f"not judged: its one check, at progress {self.at_progress:.2f}, is done"
        return f"not judged: its one check is at progress {self.at_progress:.2f}"


class LossPlateau(StopRule):
    name = "loss-plateau"

    def __init__(
        self,
        window: int = 5,
        rel_tol: float = 0.01,
        job_kinds: Iterable[str] = ("rlhf",),
    ) -> None:
        super().__init__(job_kinds)
        if not window >= 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if not rel_tol >= 0:
            raise ValueError(f"rel_tol must be >= 0, got {rel_tol}")
        self.window, self.rel_tol = window, rel_tol

    def new_state(self) -> deque[float]:
        return deque(maxlen=self.window + 1)

    def decide(self, state: deque[float], event: EvalEvent) -> Decision:
        state.append(event.loss)
        if len(state) <= self.window:
            return CONTINUE
        old, new = state[0], state[-1]
        improvement = (old - new) / max(abs(old), _TINY)
        if improvement < self.rel_tol:
            reason = f"loss improved {improvement:.2%} over {self.window} evals"
            return Decision(True, f"{reason} (< {self.rel_tol:.2%})")
        return CONTINUE

    def explain(self, job_id: str) -> str:
        state = self._state.get(job_id)
        if state is None:
            return super().explain(job_id)
        if len(state) <= self.window:
            return warming_up(len(state), self.window)
        old, new = state[0], state[-1]
        if math.isnan(old) or math.isnan(new):
            return "not judged: the job reports no training loss"
        improvement = (old - new) / max(abs(old), _TINY)
        return f"continue: loss improved {improvement:.2%} over {self.window} evals"
