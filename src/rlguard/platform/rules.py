"""Stop rules per job: the platform's rule, or a job's override, as cluster `Scheduler` objects.

Every (rule, params) pair the jobs ask for is one `Scheduler(policy, rule)` sharing the platform's
policy object: the same classes the simulator runs, unchanged. Rules keep state per job and never
across jobs, so one rule object serves every job that names the same parameters.

The simulator's rules watch RLHF jobs only (the jobs that hack there). On the platform they judge
every kind that reports evals (sft, dpo, reward, rlhf, or a command job's own kind) with the same
knobs: a score is higher-is-better whatever the kind (a watcher's `mode: min` reports a loss
negated), so a decline means the same thing for an SFT job's eval loss as for an RLHF job's
reward. `rlguard serve --stop-kinds` narrows that to some of the platform's kinds (a command job
of another kind is then left alone). Every decision says why: one that did not
judge (a kind left alone, the rule `none`, a warm-up) says so, and a judged continue says what the
rule saw (`StopRule.explain`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from rlguard.cluster.events import Decision, EvalEvent
from rlguard.cluster.policies.base import Policy
from rlguard.cluster.registry import RULES, RuleParams
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.stopping.base import StopRule
from rlguard.errors import InputError
from rlguard.platform.keys import new_id


class EveryKind:
    """A platform rule's `job_kinds`: every kind (`--stop-kinds` is checked by `judge`, which
    says so in the decision, rather than by the rule's silent filter)."""

    def __contains__(self, kind: object) -> bool:
        return True


def platform_rule(name: str, params: RuleParams) -> StopRule | None:
    """A registry rule as the platform runs it: on every kind of job."""
    rule = RULES[name](params)
    if rule is not None:
        rule.job_kinds = EveryKind()  # type: ignore[assignment]
    return rule


def judge(rule: StopRule | None, event: EvalEvent, kinds: frozenset[str] | None) -> Decision:
    """A rule's decision on one eval, with a reason always: `kinds` None judges every kind."""
    if rule is None:
        return Decision(False, "not judged: the job's stop rule is none")
    if kinds is not None and event.kind not in kinds:
        watched = ", ".join(sorted(kinds))
        return Decision(
            False, f"not judged: kind {event.kind!r} is not in --stop-kinds ({watched})"
        )
    decision = rule.observe(event)
    return decision if decision.reason else Decision(decision.stop, rule.explain(event.job_id))


def parse_kinds(raw: str) -> frozenset[str] | None:
    """`--stop-kinds`: `all` (None), or a comma list of the kinds the platform gives jobs
    (InputError naming an unknown one: a typo would silently leave a kind unjudged)."""
    from rlguard.platform.jobspec import STAGE_KINDS  # here: `jobs export-curves` imports us

    known = sorted(set(STAGE_KINDS.values()))
    if raw.strip() == "all":
        return None
    kinds = [k.strip() for k in raw.split(",") if k.strip()]
    for kind in kinds:
        if kind not in known:
            raise InputError(
                f"option --stop-kinds: unknown kind {kind!r} (choose from {', '.join(known)}, "
                "or all)"
            )
    if not kinds:
        raise InputError("option --stop-kinds: name at least one kind, or all")
    return frozenset(kinds)


@dataclass(frozen=True)
class JobRule:
    """What watches one job: a rule's name and knobs, and whether it may only advise."""

    rule: str
    params: RuleParams
    shadow: bool

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, **self.params.model_dump(), "shadow": self.shadow}


class StopRules:
    def __init__(
        self, policy: Policy, rule: str, params: RuleParams, kinds: frozenset[str] | None = None
    ) -> None:
        if rule not in RULES:
            raise InputError(f"option --stop-rule: unknown rule {rule!r} ({', '.join(RULES)})")
        self.policy, self.kinds = policy, kinds  # kinds None: every kind is judged
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
            rule = platform_rule(job_rule.rule, job_rule.params)
            self._schedulers[key] = Scheduler(self.policy, rule)
        return self._schedulers[key]

    def observe(self, job_rule: JobRule, event: EvalEvent) -> Decision:
        return judge(self.for_rule(job_rule).stop_rule, event, self.kinds)

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
