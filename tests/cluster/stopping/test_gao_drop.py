"""GaoDrop: the score now against its best so far, read through a Gao fit and after a break."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stop_events import events, first_stop

from rlguard.cluster.curves import GaoCurve
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.gao_drop import GaoDrop, break_drop_t, trend_drop_t
from rlguard.cluster.stopping.gao_trend import GaoTrend

ALPHA, BETA = 0.35, 0.15
D_STAR = float(np.exp(ALPHA / BETA - 1.0))


def gao(reach: float, n: int, noise: float = 0.0, seed: int = 0) -> list[float]:
    """A Gao curve peaking at progress 1 / reach, at progress k / n, with Gaussian eval noise."""
    progress = np.arange(1, n + 1) / n
    scores = GaoCurve(ALPHA, BETA, reach * D_STAR, 0.4, 0.3)(progress)
    return list(scores + np.random.default_rng(seed).normal(0.0, noise, n))


def crash_then_creep(n: int = 16, noise: float = 0.01, seed: int = 0) -> list[float]:
    """Rises 0.4 -> 0.6 by progress 6/16, crashes to 0.44 at the next eval, creeps to 0.48."""
    progress = np.arange(1, n + 1) / n
    true = np.interp(progress, [0.0, 6 / 16, 7 / 16, 1.0], [0.4, 0.6, 0.44, 0.48])
    return list(true + np.random.default_rng(seed).normal(0.0, noise, n))


def test_defaults() -> None:
    rule = GaoDrop()
    assert rule.name == "gao-drop"
    assert (rule.alpha, rule.break_alpha, rule.warmup, rule.after_best) == (0.01, 0.01, 9, 4)
    assert rule.job_kinds == {"rlhf"}


@pytest.mark.parametrize("field", ["alpha", "break_alpha"])
@pytest.mark.parametrize("level", [0.0, 1.0, -0.1])
def test_levels_must_be_probabilities(field: str, level: float) -> None:
    with pytest.raises(ValueError, match=field):
        GaoDrop(**{field: level})


def test_after_best_needs_a_line_and_warmup_room_for_both_sides() -> None:
    with pytest.raises(ValueError, match="after_best"):
        GaoDrop(after_best=1)
    with pytest.raises(ValueError, match="warmup"):
        GaoDrop(warmup=6, after_best=4)
    assert GaoDrop(warmup=5, after_best=2).warmup == 5


def test_stops_a_noise_free_hacking_curve_at_the_first_eval_past_its_peak() -> None:
    scores = gao(reach=1.5, n=20)  # peak at progress 2/3: step 13 is the last before it
    assert int(np.argmax(scores)) == 12
    assert first_stop(GaoDrop(), events(scores)) == 14


@pytest.mark.parametrize("reach", [0.2, 0.5, 0.9])
def test_never_stops_a_noise_free_healthy_curve(reach: float) -> None:
    assert first_stop(GaoDrop(), events(gao(reach=reach, n=30))) is None


def test_stops_a_crash_then_slow_recovery_that_gao_trend_mostly_misses() -> None:
    runs = [events(crash_then_creep(seed=seed)) for seed in range(20)]
    for evs in runs:  # the best is eval 6; the break test can speak once 4 evals follow it
        rule = GaoDrop()
        decisions = [rule.observe(ev) for ev in evs]
        assert [d.stop for d in decisions].index(True) + 1 == 10
    missed = sum(first_stop(GaoTrend(), evs) is None for evs in runs)
    assert missed >= 10  # measured: GaoTrend stops 6 of these 20


@pytest.mark.parametrize("seed", range(20))
def test_does_not_stop_a_noisy_healthy_gao_curve(seed: int) -> None:
    # Still rising at the end (reach 0.5), eval noise 0.02 against a gain of 0.3.
    assert first_stop(GaoDrop(), events(gao(reach=0.5, n=16, noise=0.02, seed=seed))) is None


def test_only_watches_its_job_kinds() -> None:
    scores = gao(reach=3.0, n=20)
    assert first_stop(GaoDrop(), events(scores, kind="dpo")) is None
    assert first_stop(GaoDrop(job_kinds=("dpo",)), events(scores, kind="dpo")) == 9


def test_state_is_per_job() -> None:
    falling, rising = events(gao(3.0, 20), job_id="a"), events(gao(0.5, 20), job_id="b")
    rule = GaoDrop()
    for a, b in zip(falling[:8], rising[:8], strict=True):
        assert not rule.observe(a).stop and not rule.observe(b).stop
    assert not rule.observe(rising[8]).stop
    assert rule.observe(falling[8]).stop
    rule.forget("a")  # a finished job's history is dropped: a new job of that id starts over
    assert not rule.observe(falling[0]).stop


# --- the two statistics --------------------------------------------------------------------------


def test_trend_drop_is_zero_while_the_fit_peaks_at_the_latest_eval() -> None:
    p = np.arange(1, 11) / 10
    assert trend_drop_t(p, np.array(gao(reach=0.5, n=10))) == 0.0


def test_break_drop_needs_two_evals_up_to_the_best_and_after_best_after_it() -> None:
    p = np.arange(1, 9) / 8
    assert break_drop_t(p, np.array([0.9, 0.5, 0.4, 0.5, 0.4, 0.5, 0.4, 0.45]), 2) == 0.0
    late_best = np.array([0.3, 0.4, 0.5, 0.6, 0.7, 0.9, 0.5, 0.4])
    assert break_drop_t(p, late_best, 3) == 0.0
    assert break_drop_t(p, late_best, 2) < 0.0


def test_break_drop_matches_two_lines_fitted_by_hand() -> None:
    p = np.arange(1, 11) / 10
    y = np.array([0.40, 0.47, 0.52, 0.61, 0.55, 0.50, 0.49, 0.52, 0.50, 0.53])
    before, after = slice(0, 4), slice(4, 10)  # the best is the 4th eval
    b1, b0 = np.polyfit(p[before], y[before], 1)
    a1, a0 = np.polyfit(p[after], y[after], 1)
    rss = sum(
        float(np.sum((y[s] - np.polyval(c, p[s])) ** 2))
        for s, c in ((before, (b1, b0)), (after, (a1, a0)))
    )
    sigma2 = rss / (10 - 4)

    def leverage(x: np.ndarray, at: float) -> float:
        design = np.column_stack([np.ones_like(x), x])
        point = np.array([1.0, at])
        return float(point @ np.linalg.inv(design.T @ design) @ point)

    fall = (a0 + a1 * p[-1]) - (b0 + b1 * p[3])
    se = np.sqrt(sigma2 * (leverage(p[before], p[3]) + leverage(p[after], p[-1])))
    assert break_drop_t(p, y, 4) == pytest.approx(fall / se, rel=1e-9)


# --- properties ----------------------------------------------------------------------------------

histories = st.lists(st.integers(200, 800), min_size=9, max_size=20).map(
    lambda xs: np.array(xs) / 1000.0
)


@settings(max_examples=60, deadline=None)
@given(histories, st.floats(-0.1, 0.1), st.floats(0.5, 1.2))
def test_decisions_do_not_depend_on_the_score_scale(scores, shift, scale) -> None:
    """Both tests read the noise from residuals, so an affine change of units changes nothing."""
    p = np.arange(1, scores.size + 1) / scores.size
    moved = shift + scale * scores
    assert trend_drop_t(p, moved) == pytest.approx(trend_drop_t(p, scores), rel=1e-6, abs=1e-9)
    assert break_drop_t(p, moved, 4) == pytest.approx(break_drop_t(p, scores, 4), rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(histories)
def test_a_looser_rule_stops_no_later(scores) -> None:
    evs = [
        EvalEvent("j", "rlhf", i + 1, (i + 1) / scores.size, s, 1.0) for i, s in enumerate(scores)
    ]
    strict = first_stop(GaoDrop(alpha=0.005, break_alpha=0.005), evs)
    loose = first_stop(GaoDrop(alpha=0.02, break_alpha=0.02), evs)
    assert strict is None or (loose is not None and loose <= strict)
