"""Patience (Keras/Lightning/HF early stopping) and its EMA-smoothed variant."""

from __future__ import annotations

import numpy as np
import pytest
from stop_events import events, first_stop

from rlguard.cluster.stopping.patience import EmaPatience, Patience


def test_names_and_defaults() -> None:
    plain, ema = Patience(), EmaPatience()
    assert (plain.name, ema.name) == ("patience", "ema-patience")
    assert (plain.patience, plain.min_delta, plain.warmup) == (5, 0.0, 0)
    assert (ema.patience, ema.min_delta, ema.warmup, ema.alpha) == (5, 0.0, 0, 0.3)
    assert plain.job_kinds == ema.job_kinds == {"rlhf"}


@pytest.mark.parametrize("patience", [1, 2, 3, 5])
def test_stops_exactly_when_the_count_reaches_patience(patience: int) -> None:
    rule = Patience(patience=patience)
    decisions = [rule.observe(ev) for ev in events([0.5] + [0.4] * (patience + 2))]
    stops = [d.stop for d in decisions]
    assert stops.index(True) == patience  # eval patience + 1, the patience-th non-improvement
    assert f"{patience} evals" in decisions[patience].reason


def test_ties_are_not_improvements() -> None:
    assert first_stop(Patience(patience=2), events([0.5, 0.5, 0.5])) == 3


def test_counts_non_improvements_not_declines() -> None:
    # 0.4 rises over 0.3 but is not above the best 0.5: it counts (EvalStop would reset here)
    assert first_stop(Patience(patience=2), events([0.5, 0.3, 0.4])) == 3


def test_an_improvement_resets_the_count() -> None:
    scores = [0.5, 0.4, 0.6, 0.5, 0.7, 0.6, 0.8, 0.75]
    assert first_stop(Patience(patience=2), events(scores)) is None
    assert first_stop(Patience(patience=2), events([0.5, 0.4, 0.6, 0.5, 0.55])) == 5


def test_a_single_noisy_dip_does_not_stop_with_patience_2() -> None:
    scores = [0.1, 0.2, 0.3, 0.25, 0.4, 0.5]
    assert first_stop(Patience(patience=2), events(scores)) is None
    assert first_stop(Patience(patience=1), events(scores)) == 4


def test_min_delta_rise_of_at_most_min_delta_is_not_an_improvement() -> None:
    # exact binary fractions: 0.25 is not > 0.0 + 0.25
    assert first_stop(Patience(patience=2, min_delta=0.25), events([0.0, 0.25, 0.25])) == 3
    assert first_stop(Patience(patience=2, min_delta=0.25), events([0.0, 0.25, 0.5])) is None


def test_min_delta_non_improvement_leaves_the_best_unchanged() -> None:
    # 0.2 does not become the best, so 0.3 (> 0.0 + 0.25) is an improvement and resets the count
    assert first_stop(Patience(patience=2, min_delta=0.25), events([0.0, 0.2, 0.3])) is None


def test_warmup_evals_are_ignored() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    assert first_stop(Patience(patience=2), events(scores)) == 3
    # evals 1-3 neither count nor set the best: eval 4 is the first best, eval 5 one miss
    assert first_stop(Patience(patience=2, warmup=3), events(scores)) is None
    assert first_stop(Patience(patience=1, warmup=3), events(scores)) == 5


def test_jobs_are_independent_when_interleaved() -> None:
    a = events([0.5, 0.6, 0.7], job_id="a")
    b = events([0.1, 0.2, 0.3], job_id="b")
    interleaved = [ev for pair in zip(a, b, strict=True) for ev in pair]
    # with a shared best, every b eval would be a non-improvement
    assert first_stop(Patience(patience=1), interleaved) is None


def test_other_job_kinds_never_stop() -> None:
    for rule in (Patience(patience=1), EmaPatience(patience=1)):
        assert first_stop(rule, events([0.9, 0.5, 0.1], kind="dpo")) is None
        assert rule._state == {}


def test_forget_drops_the_jobs_state() -> None:
    rule = Patience(patience=2)
    first, second, third = events([0.9, 0.5, 0.4])
    assert not rule.observe(first).stop
    assert not rule.observe(second).stop  # one miss
    rule.forget("j")
    assert "j" not in rule._state
    assert not rule.observe(third).stop  # fresh best
    rule.forget("never-seen")


def test_ema_smooths_a_dip_plain_patience_stops_on() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.35, 0.5]
    assert first_stop(Patience(patience=1), events(scores)) == 5
    # EMA: 0.1, 0.13, 0.181, 0.2467, 0.2777 (still rising), 0.3444
    assert first_stop(EmaPatience(patience=1, alpha=0.3), events(scores)) is None


def test_ema_still_stops_on_a_sustained_decline() -> None:
    # EMA: 0.5, 0.53, 0.581, 0.4967 (miss 1), 0.4077 (miss 2)
    scores = [0.5, 0.6, 0.7, 0.3, 0.2, 0.1]
    assert first_stop(EmaPatience(patience=2, alpha=0.3), events(scores)) == 5


def test_ema_is_initialised_at_the_first_score() -> None:
    # EMA 0.8, 0.7: a miss (initialised at 0 it would be 0.4, 0.5: an improvement)
    assert first_stop(EmaPatience(patience=1, alpha=0.5), events([0.8, 0.6])) == 2


def test_ema_is_updated_during_warmup() -> None:
    # EMA 1.0 (warm-up), 0.5 (first best), 0.35 (miss)
    assert first_stop(EmaPatience(patience=1, warmup=1, alpha=0.5), events([1.0, 0.0, 0.2])) == 3


def test_ema_with_alpha_1_is_plain_patience() -> None:
    rng = np.random.default_rng(0)
    for seed in range(20):
        scores = np.clip(0.5 + np.cumsum(rng.normal(0, 0.05, 30)), 0, 1).tolist()
        evs = events(scores, job_id=f"job{seed}")
        plain, ema = Patience(patience=3, warmup=1), EmaPatience(patience=3, warmup=1, alpha=1.0)
        assert [plain.observe(e) for e in evs] == [ema.observe(e) for e in evs]


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (Patience, {"patience": 0}, r"patience must be >= 1, got 0"),
        (Patience, {"min_delta": -0.5}, r"min_delta must be >= 0, got -0\.5"),
        (Patience, {"min_delta": float("nan")}, r"min_delta must be >= 0, got nan"),
        (Patience, {"warmup": -1}, r"warmup must be >= 0, got -1"),
        (EmaPatience, {"patience": 0}, r"patience must be >= 1, got 0"),
        (EmaPatience, {"alpha": 0.0}, r"alpha must be in \(0, 1\], got 0\.0"),
        (EmaPatience, {"alpha": 1.5}, r"alpha must be in \(0, 1\], got 1\.5"),
        (EmaPatience, {"alpha": -0.1}, r"alpha must be in \(0, 1\], got -0\.1"),
    ],
)
def test_invalid_arguments(cls: type[Patience], kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


def test_a_stop_due_at_the_last_eval_is_only_a_reason() -> None:
    # The simulator never shows a rule the last eval; a live job's watcher does (progress 1).
    # The TRL lab's honest seed 2 (0.625 at step 12, three evals without a new best, the third
    # its last) was "stopped" there, at no saving.
    scores = [0.53, 0.55, 0.625, 0.617, 0.589, 0.604]
    rule = Patience(patience=3)
    decisions = [rule.observe(ev) for ev in events(scores, n_evals=6)]
    assert not any(d.stop for d in decisions)
    assert (
        decisions[-1].reason == "at its last eval (nothing left to save): no improvement in 3 evals"
    )
    assert first_stop(Patience(patience=3), events(scores, n_evals=7)) == 6
