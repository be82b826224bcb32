"""Stop-rule verdicts, decided for a block of jobs before the simulated clock reaches them.

A stop rule decides on a job's own evals only (per-job state, never across jobs: stopping/base.py),
and a job's i-th eval observes the same score, loss and proxy however the job is scheduled. So the
simulator shows the rule each job's eval events as soon as the job is loaded, in eval order, up to
the first stop (or the last eval but one: the last completes the job), and then plays the verdict
at that eval's simulated time. The rule sees exactly the events it would have seen eval by eval,
and a simulation needs no heap event per eval, only per segment of a job's run.

A rule that keeps `StopRule.observe` (all of ours) is driven through its own parts, as that
`observe` drives them for a job it has not seen: the kinds it watches, a fresh `new_state()` and
`decide` per event, without a state lookup per event (a million-job run shows a rule about 8
million events). A rule with its own `observe` is shown every job's events and told when each is
done.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from rlguard.cluster.blocks import JobBlock
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.stopping.base import StopRule

_FIELDS = ("job_id", "kind", "step", "progress", "score", "loss", "proxy", "metrics")
assert tuple(f.name for f in fields(EvalEvent)) == _FIELDS and not hasattr(
    EvalEvent, "__post_init__"
)
_JOB_ID, _KIND, _STEP, _PROGRESS, _SCORE, _LOSS, _PROXY, _METRICS = (
    getattr(EvalEvent, name).__set__ for name in _FIELDS
)


def _event(
    job_id: str,
    kind: str,
    step: int,
    progress: float,
    score: float,
    loss: float,
    proxy: float | None,
) -> EvalEvent:
    """`EvalEvent(...)`, about twice as fast: the frozen dataclass's `__init__` sets each slot
    through `object.__setattr__`; this sets them through their descriptors (the same object)."""
    event = object.__new__(EvalEvent)
    _JOB_ID(event, job_id)
    _KIND(event, kind)
    _STEP(event, step)
    _PROGRESS(event, progress)
    _SCORE(event, score)
    _LOSS(event, loss)
    _PROXY(event, proxy)
    _METRICS(event, None)  # a simulated job measures nothing else
    return event


def stop_points(scheduler: Scheduler, block: JobBlock) -> tuple[np.ndarray, dict[int, str]]:
    """Per job, the index of the eval its stop rule stops it at (-1: none), and the reasons."""
    stops = np.full(len(block), -1, dtype=np.int64)
    reasons: dict[int, str] = {}
    rule = scheduler.stop_rule
    if rule is None:
        return stops, reasons
    plain = type(rule).observe is StopRule.observe
    watched = [j for j, kind in enumerate(block.kinds) if not plain or kind in rule.job_kinds]
    scores = block.scores[watched].tolist()
    losses = block.losses[watched].tolist()
    proxies = block.proxies[watched].tolist()
    has_proxy = block.has_proxy[watched].tolist()
    n_evals = block.n_evals[watched].tolist()
    steps = range(1, block.scores.shape[1] + 1)
    progress: dict[int, list[float]] = {}  # per eval count: the progress of each eval
    decide = rule.decide if plain else lambda _, event: scheduler.observe(event)
    for k, j in enumerate(watched):
        job_id, kind, n = block.job_ids[j], block.kinds[j], n_evals[k]
        if n not in progress:
            progress[n] = [step / n for step in steps]
        proxy = proxies[k] if has_proxy[k] else [None] * n
        state = rule.new_state() if plain else None
        for step, at, score, loss, proxy_i in zip(
            steps[: n - 1], progress[n], scores[k], losses[k], proxy, strict=False
        ):
            decision = decide(state, _event(job_id, kind, step, at, score, loss, proxy_i))
            if decision.stop:
                stops[j] = step - 1
                reasons[j] = decision.reason or "stopped"
                break
        if not plain:
            scheduler.job_ended(job_id)
    return stops, reasons
