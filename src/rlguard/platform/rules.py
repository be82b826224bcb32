"""Stop rules per job: the platform's rule, or a job's override, as cluster `Scheduler` objects.

Every (rule, params) pair the jobs ask for is one `Scheduler(policy, rule)` sharing the platform's
policy object: the same classes the simulator runs, unchanged. Rules keep state per job and never
across jobs, so one rule object serves every job that names the same parameters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.policies.base import Policy
from rlguard.cluster.registry import RULES, RuleParams
from rlguard.cluster.scheduler import Scheduler
from rlguard.errors import InputError
from rlguard.platform.keys import new_id


@dataclass(frozen=True)
class JobRule:
    """What watches one job: a rule's name and knobs, and whether it may only advise."""

    rule: str
    params: RuleParams
    shadow: bool

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, **self.params.model_dump(), "shadow": self.shadow}


class StopRules:
    def __init__(self, policy: Policy, rule: str, params: RuleParams) -> None:
        if rule not in RULES:
            raise InputError(f"option --stop-rule: unknown rule {rule!r} ({', '.join(RULES)})")
        self.policy = policy
        self.default = JobRule(rule, params, shadow=False)
        self._schedulers: dict[tuple[str, RuleParams], Scheduler] = {}
        self.scheduler = self.for_rule(self.default)

    def resolve(self, override: dict[str, Any]) -> JobRule:
        """A job's rule from its stop_policy (fields left out keep the platform's)."""
        rule = override.get("rule") or self.default.rule
        if rule not in RULES:
            raise InputError(
                f"stop_policy.rule: unknown rule {rule!r} (choose from {', '.join(RULES)})"
            )
        knobs = {
            k: override[k]
            for k in ("k", "min_delta", "warmup", "patience")
            if override.get(k) is not None
        }
        try:
            params = self.default.params.model_copy(update=knobs)
            params = RuleParams.model_validate(params.model_dump())
        except ValidationError as e:
            err = e.errors()[0]
            raise InputError(f"stop_policy.{err['loc'][0]}: {err['msg']}") from None
        return JobRule(rule, params, bool(override.get("shadow", False)))

    def for_rule(self, job_rule: JobRule) -> Scheduler:
        key = (job_rule.rule, job_rule.params)
        if key not in self._schedulers:
            self._schedulers[key] = Scheduler(self.policy, RULES[job_rule.rule](job_rule.params))
        return self._schedulers[key]

    def observe(self, job_rule: JobRule, event: EvalEvent):  # type: ignore[no-untyped-def]
        return self.for_rule(job_rule).observe(event)

    def job_ended(self, job_id: str) -> None:
        for scheduler in self._schedulers.values():
            scheduler.job_ended(job_id)


def evidence(job_rule: JobRule, eval_seqs: list[int]) -> dict[str, int]:
    """The eval events a decision rests on, as the range of the job's eval seqs it spans: EvalStop
    compares its last k + 1 evals (k declines); the other rules read the whole history. A range
    keeps a decision's size constant however long the history is; the evals are the job's eval
    events with seq from `from_seq` to `to_seq`."""
    window = job_rule.params.k + 1 if job_rule.rule == "evalstop" else len(eval_seqs)
    first = max(len(eval_seqs) - window, 0)
    return {"from_seq": eval_seqs[first], "to_seq": eval_seqs[-1], "evals": len(eval_seqs) - first}


def decision_row(
    job_id: str, seq: int, rule: dict[str, Any], stop: bool, reason: str, evidence_: dict[str, Any]
) -> dict[str, Any]:
    """A decision as stored (`rule`: its rule, params and shadow) on the job's event `seq`."""
    return {
        "id": new_id("dec"),
        "job_id": job_id,
        "event_seq": seq,
        **rule,
        "stop": stop,
        "reason": reason,
        "evidence": evidence_,
        "created_at": time.time(),
    }


def stop_event_data(decision: dict[str, Any]) -> dict[str, Any]:
    """What the `decision` event a stop records says of its decision."""
    keys = ("rule", "stop", "reason", "shadow", "evidence")
    return {"decision": decision["id"], **{k: decision[k] for k in keys}}
