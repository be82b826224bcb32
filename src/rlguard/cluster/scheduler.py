"""A scheduler = a base policy, optionally wrapped by a stop rule (EvalStop's shape).

The wrapper only adds stop decisions on eval events; ordering, preemption and placement stay the
base policy's. The engine (and later the live platform) talks to this one object.
"""

from __future__ import annotations

import numpy as np

from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.policies.base import Policy
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.view import ClusterView


class Scheduler:
    def __init__(self, policy: Policy, stop_rule: StopRule | None = None) -> None:
        self.policy = policy
        self.stop_rule = stop_rule

    @property
    def name(self) -> str:
        rule = self.stop_rule.name if self.stop_rule else "none"
        return f"{rule}({self.policy.name})"

    @property
    def preemptive(self) -> bool:
        return self.policy.preemptive

    @property
    def backfill(self) -> bool:
        return self.policy.backfill

    @property
    def tick_s(self) -> float | None:
        return self.policy.tick_s

    @property
    def wakes(self) -> bool:
        """Whether the policy names times its order changes on its own (it overrides
        `next_change_s`): an engine asks it after each pass only then, which keeps that view off
        the passes of every other policy."""
        return type(self.policy).next_change_s is not Policy.next_change_s

    def next_change_s(self, view: ClusterView) -> float | None:
        return self.policy.next_change_s(view)

    def priority(self, view: ClusterView) -> np.ndarray:
        return self.policy.priority(view)

    def order(self, view: ClusterView, hint: np.ndarray | None = None) -> np.ndarray:
        """The view's rows, first to run first: by priority, then submission, then row.

        `hint`, positions in the view in a likely order (an engine passes its last pass's), only
        makes the sort cheaper, never changes it: keys drift little between passes, and a stable
        sort of nearly sorted keys is close to linear. It is used when the keys are all distinct
        (then they alone fix the order); ties and NaNs take the full sort.
        """
        keys = self.priority(view)
        if hint is not None:
            hinted = keys[hint]
            by_key = np.argsort(hinted, kind="stable")
            ordered = hinted[by_key]
            if not (np.isnan(ordered[-1:]).any() or (ordered[1:] == ordered[:-1]).any()):
                return view.rows[hint[by_key]]
        return view.rows[np.lexsort((view.rows, view.submit_s, keys))]

    def observe(self, event: EvalEvent) -> Decision:
        return self.stop_rule.observe(event) if self.stop_rule else CONTINUE

    def job_ended(self, job_id: str) -> None:
        if self.stop_rule:
            self.stop_rule.forget(job_id)
