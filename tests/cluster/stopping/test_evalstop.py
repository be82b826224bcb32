"""Edge cases of EvalStop: stop after k consecutive eval-score declines (arXiv 2606.04145)."""

from __future__ import annotations

import pytest
from stop_events import events, first_stop, interleaved_stops

from rlguard.cluster.stopping.evalstop import EvalStop


def test_name_and_defaults() -> None:
    rule = EvalStop()
    assert rule.name == "evalstop"
    assert (rule.k, rule.min_delta, rule.warmup) == (3, 0.0, 2)
    assert rule.job_kinds == {"rlhf"}


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_k_consecutive_declines_stop_exactly_at_the_kth(k: int) -> None:
    rising = [0.3, 0.4, 0.5]
    declining = [0.5 - 0.05 * (i + 1) for i in range(k)]
    rule = EvalStop(k=k, warmup=0)
    decisions = [rule.observe(ev).stop for ev in events(rising + declining + [0.1])]
    assert decisions.index(True) == len(rising) + k - 1
    assert not any(decisions[: len(rising) + k - 1])


def test_stop_reason_names_k() -> None:
    rule = EvalStop(k=2, warmup=0)
    decisions = [rule.observe(ev) for ev in events([0.5, 0.4, 0.3])]
    assert decisions[-1].stop
    assert "2 consecutive" in decisions[-1].reason


def test_ties_are_not_declines() -> None:
    assert first_stop(EvalStop(k=1, warmup=0), events([0.5] * 6)) is None


def test_a_tie_resets_the_streak() -> None:
    # decline, tie (reset), decline: never two in a row
    assert first_stop(EvalStop(k=2, warmup=0), events([0.5, 0.4, 0.4, 0.3])) is None


def test_a_rise_resets_the_streak() -> None:
    scores = [0.5, 0.4, 0.3, 0.35, 0.3, 0.25, 0.3]
    assert first_stop(EvalStop(k=3, warmup=0), events(scores)) is None


@pytest.mark.parametrize("k", [2, 3])
def test_a_single_noisy_dip_does_not_stop(k: int) -> None:
    scores = [0.1, 0.2, 0.3, 0.25, 0.4, 0.5, 0.45, 0.6]
    assert first_stop(EvalStop(k=k, warmup=0), events(scores)) is None


def test_declines_during_warmup_do_not_count() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    assert first_stop(EvalStop(k=2, warmup=0), events(scores)) == 3
    # evals 1-3 only recorded; eval 4 is the first counted decline (against eval 3), eval 5 the 2nd
    assert first_stop(EvalStop(k=2, warmup=3), events(scores)) == 5


def test_min_delta_small_drops_are_not_declines() -> None:
    assert first_stop(EvalStop(k=2, min_delta=0.05, warmup=0), events([0.5, 0.46, 0.42])) is None
    assert first_stop(EvalStop(k=2, min_delta=0.05, warmup=0), events([0.5, 0.44, 0.38])) == 3


def test_min_delta_drop_of_exactly_min_delta_is_not_a_decline() -> None:
    scores = [0.75, 0.5, 0.25, 0.0]  # exact binary fractions
    assert first_stop(EvalStop(k=1, min_delta=0.25, warmup=0), events(scores)) is None


def test_jobs_are_independent_when_interleaved() -> None:
    a = events([0.5, 0.6, 0.7, 0.8], job_id="a")
    b = events([0.1, 0.2, 0.3, 0.4], job_id="b")
    interleaved = [ev for pair in zip(a, b, strict=True) for ev in pair]
    # with state shared across jobs, every b eval would be a decline after an a eval
    assert first_stop(EvalStop(k=1, warmup=0), interleaved) is None


def test_interleaved_job_stops_on_its_own_declines_only() -> None:
    a = events([0.9, 0.8, 0.7], job_id="a")
    b = events([0.1, 0.2, 0.3], job_id="b")
    rule = EvalStop(k=2, warmup=0)
    stops = interleaved_stops(rule, a, b)
    assert stops == [("a", 3)]


def test_other_job_kinds_never_stop() -> None:
    rule = EvalStop(k=1, warmup=0)
    assert first_stop(rule, events([0.9, 0.5, 0.1], kind="dpo")) is None
    assert first_stop(rule, events([0.9, 0.5, 0.1], kind="lora")) is None
    assert rule._state == {}


def test_job_kinds_can_be_chosen() -> None:
    rule = EvalStop(k=1, warmup=0, job_kinds=("dpo",))
    assert first_stop(rule, events([0.9, 0.5], kind="dpo")) == 2
    assert first_stop(rule, events([0.9, 0.5], kind="rlhf", job_id="r")) is None


def test_forget_drops_the_jobs_state() -> None:
    rule = EvalStop(k=2, warmup=0)
    first, second, third = events([0.9, 0.8, 0.7])
    assert not rule.observe(first).stop
    assert not rule.observe(second).stop  # one decline
    rule.forget("j")
    assert "j" not in rule._state
    assert not rule.observe(third).stop  # fresh state: nothing to decline from
    rule.forget("never-seen")  # no-op


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be >= 1, got 0"),
        ({"min_delta": -0.1}, "min_delta must be >= 0, got -0.1"),
        ({"warmup": -1}, "warmup must be >= 0, got -1"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EvalStop(**kwargs)
