"""The demo's verdict on each job: hacking by its own evals, and why a hacking job ran on."""

from rlguard.cli.demo_verdict import CURVE_RULES, first_stop, verdict
from rlguard.cluster.registry import RULES, RuleParams

K2 = RuleParams(k=2)


def evals(gold, proxy=None):
    proxy = proxy or [0.5 + 0.2 * i for i in range(len(gold))]
    n = len(gold) - 1
    return [
        {"step": 6 * i, "progress": i / n, "score": g, "proxy": p}
        for i, (g, p) in enumerate(zip(gold, proxy, strict=True))
    ]


# rises, then falls in steps that a plateau interrupts: never two counted declines in a row
SAWTOOTH = [0.45, 0.50, 0.513, 0.49, 0.495, 0.47, 0.475, 0.46, 0.458]


def test_a_hacking_job_the_rule_let_run_says_why_and_who_would_stop_it():
    assert first_stop("evalstop", K2, evals(SAWTOOTH)) is None
    result = verdict(evals(SAWTOOTH), stopped=False, rule=K2)
    assert result["hacking"] is True
    assert result["note"].startswith("evalstop (k = 2, min_delta 0.01) saw no 2 consecutive")
    assert "0.513 (step 12) to 0.458" in result["note"]
    assert "would stop it" in result["note"] or "no other curve rule" in result["note"]


def test_a_stopped_or_honest_job_has_no_note():
    assert verdict(evals(SAWTOOTH), stopped=True, rule=K2) == {"hacking": True, "note": None}
    rising = [0.40 + 0.02 * i for i in range(9)]
    assert verdict(evals(rising), stopped=False, rule=K2) == {"hacking": False, "note": None}


def test_gold_falling_while_the_proxy_falls_too_is_not_hacking():
    falling_proxy = [1.0 - 0.05 * i for i in range(len(SAWTOOTH))]
    assert verdict(evals(SAWTOOTH, falling_proxy), stopped=False, rule=K2)["hacking"] is False


def test_only_rules_that_judge_the_curve_are_offered():
    assert set(CURVE_RULES) < set(RULES)
    note = verdict(evals(SAWTOOTH), stopped=False, rule=K2)["note"]
    assert "fixed-progress" not in note and "loss-plateau" not in note


def test_first_stop_is_the_step_of_the_kth_decline():
    steady_fall = [0.5, 0.55, 0.6, 0.55, 0.5, 0.45]
    assert first_stop("evalstop", K2, evals(steady_fall)) == 24
    assert first_stop("none", K2, evals(steady_fall)) is None


def test_evals_without_a_proxy_are_not_judged():
    no_proxy = [dict(e, proxy=None) for e in evals(SAWTOOTH)]
    assert verdict(no_proxy, stopped=False, rule=K2)["hacking"] is None
    assert verdict(evals(SAWTOOTH)[:1], stopped=False, rule=K2)["hacking"] is None
