"""The stop-rule interface: observe one eval event, answer continue or stop (with a reason).

A rule keeps state per job and never across jobs: its decision for a job depends only on that
job's own eval history. `job_kinds` says which job types it watches (RLHF by default, the jobs
that can reward-hack).

A job's last eval (progress 1) is never a stop: the job ends there anyway, so stopping saves
nothing and would only call a finished job stopped. The simulator never shows a rule that eval
(verdicts.py); a live platform does, and gets the rule's verdict as a reason, not a stop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from rlguard.cluster.events import AT_LAST_EVAL, CONTINUE, Decision, EvalEvent


class StopRule(ABC):
    name: ClassVar[str]

    def __init__(self, job_kinds: Iterable[str] = ("rlhf",)) -> None:
        self.job_kinds = frozenset(job_kinds)
        self._state: dict[str, Any] = {}

    def observe(self, event: EvalEvent) -> Decision:
        if event.kind not in self.job_kinds:
            return CONTINUE
        state = self._state.get(event.job_id)
        if state is None:
            state = self._state[event.job_id] = self.new_state()
        decision = self.decide(state, event)
        if decision.stop and event.progress >= 1.0:
            return Decision(False, AT_LAST_EVAL + decision.reason)
        return decision

    def explain(self, job_id: str) -> str:
        """Why the last eval of `job_id` was not a stop, in words: not judged yet (a warm-up), or
        what the rule saw. The live platform records it with a decision that has no reason of its
        own; the simulator never asks, so its hot path builds no strings."""
        return f"continue: {self.name} found no reason to stop"

    def forget(self, job_id: str) -> None:
        """Drop a finished job's state (keeps memory flat over long simulations)."""
        self._state.pop(job_id, None)

    @abstractmethod
    def new_state(self) -> Any: ...

    @abstractmethod
    def decide(self, state: Any, event: EvalEvent) -> Decision: ...


def warming_up(seen: int, of: int) -> str:
    """A warm-up eval's reason: the rule recorded eval `seen` of its `of` unjudged ones."""
    return f"not judged: warm-up, eval {seen} of {of}"
