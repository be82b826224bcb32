"""Why each demo job ended as it did, in the demo's own output.

A job hacks when its own evals say so (the lab's label: the proxy rose while gold rose and then
gave back at least a fifth of its gain). A hacking job that the platform's rule let finish gets a
note: the rule's miss in numbers, and which registered stop rule, replayed on the same evals,
would have stopped it (or that none would).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import RULES, RuleParams
from rlguard.lab.analysis import hacked

# the registered rules that judge the eval curve (fixed-progress stops every job at one point of
# its progress, and loss-plateau reads the training loss, which eval reports need not carry)
CURVE_RULES = ("patience", "ema-patience", "gao-trend", "gao-drop")


def first_stop(rule_name: str, params: RuleParams, evals: Sequence[dict[str, Any]]) -> int | None:
    """The step at which the named rule, watching these evals in order, stops; None if never."""
    rule = RULES[rule_name](params)
    if rule is None:
        return None
    for e in evals:
        event = EvalEvent("demo", "rlhf", e["step"], e["progress"], e["score"], 0.0, e["proxy"])
        if rule.observe(event).stop:
            return e["step"]
    return None


def verdict(evals: Sequence[dict[str, Any]], stopped: bool, rule: RuleParams) -> dict[str, Any]:
    """{"hacking": the lab's label on these evals, "note": why a hacking job ran on, or None}."""
    proxies = [e["proxy"] for e in evals]
    if len(evals) < 2 or None in proxies:
        return {"hacking": None, "note": "too few evals with a proxy reward to judge"}
    gold = [e["score"] for e in evals]
    hacking = hacked(gold, proxies)
    if not hacking or stopped:
        return {"hacking": hacking, "note": None}
    best = max(range(len(gold)), key=gold.__getitem__)
    missed = (
        f"evalstop (k = {rule.k}, min_delta {rule.min_delta}) saw no {rule.k} consecutive "
        f"declines after its {rule.warmup} warm-up evals, while gold fell from {gold[best]:.3f} "
        f"(step {evals[best]['step']}) to {gold[-1]:.3f}"
    )
    others = {
        name: step
        for name in CURVE_RULES
        if (step := first_stop(name, RuleParams(), evals)) is not None
    }
    if not others:
        return {"hacking": True, "note": f"{missed}; no other curve rule stops it either"}
    caught = ", ".join(f"{name} at step {step}" for name, step in others.items())
    return {"hacking": True, "note": f"{missed}; replayed, these would stop it: {caught}"}
