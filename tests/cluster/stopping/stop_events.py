"""Builders shared by the stop-rule tests: eval-event sequences and where a rule stops on them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.base import StopRule


def events(
    scores: Sequence[float] | None = None,
    losses: Sequence[float] | None = None,
    *,
    n_evals: int | None = None,
    job_id: str = "j",
    kind: str = "rlhf",
) -> list[EvalEvent]:
    """Eval events 1..len; progress = step / n_evals (n_evals defaults to one more than the
    length: the job goes on after them, so its rule may stop it at any of them)."""
    length = len(scores if scores is not None else losses or [])
    scores = scores if scores is not None else [0.5] * length
    losses = losses if losses is not None else [1.0] * length
    n = n_evals or length + 1
    pairs = enumerate(zip(scores, losses, strict=True))
    return [EvalEvent(job_id, kind, i + 1, (i + 1) / n, s, loss) for i, (s, loss) in pairs]


def first_stop(rule: StopRule, evs: Iterable[EvalEvent]) -> int | None:
    """The step of the first eval the rule stops on (None: it never does)."""
    return next((ev.step for ev in evs if rule.observe(ev).stop), None)


def interleaved_stops(
    rule: StopRule, a: Sequence[EvalEvent], b: Sequence[EvalEvent]
) -> list[tuple[str, int]]:
    """(job, step) of every stop when two jobs' evals arrive alternately."""
    return [
        (ev.job_id, ev.step)
        for pair in zip(a, b, strict=True)
        for ev in pair
        if rule.observe(ev).stop
    ]
