"""The platform's recorded eval history, replayed: as a curve file (rlguard-curves/1) for the
simulator, and through a fresh rule of a job's stop policy to check its decisions.

An operator replays their own jobs' curves with `rlguard simulate --curves FILE` to choose a stop
rule's k before changing the live one. Each job with at least two evals becomes one curve, named
by its id, with its method set to the job's kind; its hacking label is left to the simulator's
derivation (`turns_over`), since the platform knows only what it observed. A job stopped early is
recorded only up to its stop. Curves whose scores leave [0, 1] cannot be replayed and are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from rlguard.cluster.curves import MeasuredCurve
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import RuleParams
from rlguard.platform.rules import judge, platform_rule


def job_curve(job: dict[str, Any], events: Iterable[dict[str, Any]]) -> MeasuredCurve | None:
    """A job's curve from its events (the API's job and event objects), or None if unusable."""
    points: dict[float, dict[str, Any]] = {}
    for event in events:
        if event["type"] == "eval":
            points.setdefault(event["data"]["progress"], event["data"])
    progress = sorted(points)
    evals = [points[p] for p in progress]
    if len(evals) < 2 or not all(0.0 <= e["score"] <= 1.0 for e in evals):
        return None
    proxies = [e["proxy"] for e in evals]
    kls = [e["kl"] for e in evals]
    return MeasuredCurve(
        name=job["id"],
        method=job["job_kind"],
        seed=0,
        progress=progress,
        score=[e["score"] for e in evals],
        proxy=None if None in proxies else proxies,
        kl=None if None in kls else kls,
    )


def replay_decisions(
    job: dict[str, Any], events: Iterable[dict[str, Any]], kinds: frozenset[str] | None = None
) -> dict[int, tuple[bool, str]]:
    """What a fresh rule of the job's stop policy decides at each of its eval events (the API's
    job and event objects), by event seq, on a platform judging `kinds` (None: every kind), up to
    its first stop (an eval the job sent while it was being stopped is stored, not decided): the
    platform's own decisions must equal these."""
    policy = job["stop_policy"]
    knobs = {k: v for k, v in policy.items() if k in RuleParams.model_fields}
    rule = platform_rule(policy["rule"], RuleParams(**knobs))
    decided = {}
    for event in (e for e in events if e["type"] == "eval"):
        data = event["data"]
        decision = judge(
            rule,
            EvalEvent(
                job_id=job["id"],
                kind=job["job_kind"],
                step=data["step"],
                progress=data["progress"],
                score=data["score"],
                loss=math.nan if data["loss"] is None else data["loss"],
                proxy=data["proxy"],
            ),
            kinds,
        )
        decided[event["seq"]] = (decision.stop, decision.reason)
        if decision.stop and not policy.get("shadow"):
            break  # the job began stopping: the platform decides none of its later evals
    return decided
