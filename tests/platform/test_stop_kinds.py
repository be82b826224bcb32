"""Which jobs the platform's stop rules judge, and that every decision says why: every kind by
default, `--stop-kinds` narrowing it (a kind left alone is a decision that says so), the rule
`none`, a warm-up and a judged continue each in words; the simulator's rules stay RLHF-only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import BASES, RULES, RuleParams
from rlguard.errors import InputError
from rlguard.platform.rules import StopRules, parse_kinds


def event(kind: str, step: int, score: float) -> EvalEvent:
    return EvalEvent(
        job_id=f"job-{kind}", kind=kind, step=step, progress=step / 100, score=score, loss=0.0
    )


def reasons(rules: StopRules, kind: str, scores: list[float], rule: str = "evalstop") -> list:
    job_rule = rules.resolve({"rule": rule})
    return [
        (d.stop, d.reason)
        for d in (rules.observe(job_rule, event(kind, i + 1, s)) for i, s in enumerate(scores))
    ]


def test_every_kind_is_judged_by_default_and_each_decision_says_why() -> None:
    rules = StopRules(BASES["fifo"](), "evalstop", RuleParams(k=2, warmup=1))
    for kind in ("sft", "dpo", "reward", "rlhf", "my-trainer"):
        assert reasons(rules, kind, [0.5, 0.6, 0.5, 0.4]) == [
            (False, "not judged: warm-up, eval 1 of 1"),
            (False, "continue: 0 consecutive declines of k=2"),
            (False, "continue: 1 consecutive declines of k=2"),
            (True, "2 consecutive eval declines"),
        ]


def test_stop_kinds_leave_the_others_alone_and_say_so() -> None:
    rules = StopRules(BASES["fifo"](), "evalstop", RuleParams(k=1, warmup=0), parse_kinds("rlhf"))
    said = "not judged: kind 'sft' is not in --stop-kinds (rlhf)"
    assert reasons(rules, "sft", [0.5, 0.1, 0.0]) == [(False, said)] * 3
    assert reasons(rules, "rlhf", [0.5, 0.1])[-1] == (True, "1 consecutive eval declines")


def test_the_rule_none_and_patience_say_what_they_saw() -> None:
    rules = StopRules(BASES["fifo"](), "evalstop", RuleParams(patience=2))
    assert reasons(rules, "sft", [0.5], "none") == [
        (False, "not judged: the job's stop rule is none")
    ]
    assert reasons(rules, "dpo", [0.5, 0.4, 0.3], "patience") == [
        (False, "continue: 0 evals without a new best of patience=2"),
        (False, "continue: 1 evals without a new best of patience=2"),
        (True, "no improvement in 2 evals"),
    ]


def test_the_simulators_rules_still_watch_rlhf_jobs_only() -> None:
    rule = RULES["evalstop"](RuleParams(k=1, warmup=0))
    assert not any(rule.observe(event("sft", i + 1, s)).stop for i, s in enumerate([0.5, 0.1]))


@pytest.mark.parametrize(
    ("raw", "kinds"), [("all", None), ("sft, rlhf", frozenset({"sft", "rlhf"})), ("dpo", {"dpo"})]
)
def test_stop_kinds_parse(raw: str, kinds) -> None:
    assert parse_kinds(raw) == kinds


@pytest.mark.parametrize("raw", ["SFT", "sft,,rl hf", "", ","])
def test_a_bad_stop_kinds_is_one_line(raw: str) -> None:
    with pytest.raises(InputError, match="option --stop-kinds"):
        parse_kinds(raw)


def test_serve_refuses_a_bad_stop_kinds_before_starting() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rlguard.cli", "serve", "--stop-kinds", "Bad Kind"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: option --stop-kinds: 'Bad Kind' is not a job kind (e.g. sft,rlhf)"
    ]
