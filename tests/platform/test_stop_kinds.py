"""Which jobs the platform's stop rules judge, and that every decision says why: every kind by
default, `--stop-kinds` narrowing it (a kind left alone is a decision that says so), the rule
`none`, a warm-up and a judged continue each in words; the simulator's rules stay RLHF-only."""

from __future__ import annotations

import math
import re
import subprocess
import sys

import pytest

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import BASES, RULES, RuleParams
from rlguard.errors import InputError
from rlguard.platform.rules import StopRules, parse_kinds


def event(kind: str, step: int, score: float) -> EvalEvent:
    return EvalEvent(
        job_id=f"job-{kind}", kind=kind, step=step, progress=step / 100, score=score, loss=1 / step
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
            (False, "continue: 0 of k=2 consecutive declines"),
            (False, "continue: 1 of k=2 consecutive declines"),
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
        (False, "continue: 0 of patience=2 evals without a new best"),
        (False, "continue: 1 of patience=2 evals without a new best"),
        (True, "no improvement in 2 evals"),
    ]


WARM_UP = {"evalstop": 2, "loss-plateau": 5, "gao-trend": 7, "gao-drop": 8}  # unjudged evals


@pytest.mark.parametrize("rule", [r for r in RULES if r != "none"])
def test_every_rule_says_what_it_saw_at_every_eval(rule: str) -> None:
    """A healthy rising curve: each rule's warm-up evals say so, the rest say what it saw."""
    rules = StopRules(BASES["fifo"](), rule, RuleParams())
    said = [r for _, r in reasons(rules, "sft", [0.1 + 0.02 * i for i in range(20)], rule)]
    n = WARM_UP.get(rule, 0)
    assert said[:n] == [f"not judged: warm-up, eval {i + 1} of {n}" for i in range(n)]
    assert all(r.startswith(("continue: ", "not judged: its one check")) for r in said[n:]), said


def test_the_rules_name_their_numbers() -> None:
    rules = StopRules(BASES["fifo"](), "evalstop", RuleParams())
    rising = [0.1 + 0.02 * i for i in range(12)]
    assert reasons(rules, "sft", rising, "gao-trend")[-1][1].startswith(
        "continue: Gao-fit slope t="
    )
    assert "after the best eval t=" in reasons(rules, "sft", rising, "gao-drop")[-1][1]
    assert reasons(rules, "sft", rising, "fixed-progress")[0][1] == (
        "not judged: its one check is at progress 0.50"
    )
    assert reasons(rules, "sft", rising, "loss-plateau")[-1][1] == (
        "continue: loss improved 41.67% over 5 evals"  # from 1/7 to 1/12
    )


def test_loss_plateau_says_a_job_without_a_loss_is_not_judged() -> None:
    rules = StopRules(BASES["fifo"](), "loss-plateau", RuleParams())
    job_rule = rules.resolve({})
    said = [
        rules.observe(job_rule, EvalEvent("j", "sft", i, i / 10, 0.5, math.nan)).reason
        for i in range(1, 8)
    ]
    assert said[-1] == "not judged: the job reports no training loss"


def test_the_simulators_rules_still_watch_rlhf_jobs_only() -> None:
    rule = RULES["evalstop"](RuleParams(k=1, warmup=0))
    assert not any(rule.observe(event("sft", i + 1, s)).stop for i, s in enumerate([0.5, 0.1]))


@pytest.mark.parametrize(
    ("raw", "kinds"), [("all", None), ("sft, rlhf", frozenset({"sft", "rlhf"})), ("dpo", {"dpo"})]
)
def test_stop_kinds_parse(raw: str, kinds) -> None:
    assert parse_kinds(raw) == kinds


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("SFT", "unknown kind 'SFT' (choose from dpo, reward, rlhf, sft, or all)"),
        ("sft,stf", "unknown kind 'stf'"),
        ("sft,,rl hf", "unknown kind 'rl hf'"),
        ("", "name at least one kind, or all"),
        (",", "name at least one kind, or all"),
    ],
)
def test_a_bad_stop_kinds_is_one_line_naming_it(raw: str, said: str) -> None:
    with pytest.raises(InputError, match=f"^option --stop-kinds: {re.escape(said)}"):
        parse_kinds(raw)


def test_serve_refuses_a_bad_stop_kinds_before_starting() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rlguard.cli", "serve", "--stop-kinds", "sft,my-trainer"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: option --stop-kinds: unknown kind 'my-trainer' (choose from dpo, reward, rlhf, "
        "sft, or all)"
    ]
