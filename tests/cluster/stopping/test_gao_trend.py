"""GaoTrend: a one-sided t-test on the slope of a Gao-law fit to the whole eval history."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats

from rlguard.cluster.curves import GaoCurve
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.gao_trend import GaoTrend, slope_t_statistic

ALPHA, BETA = 0.35, 0.15
D_STAR = float(np.exp(ALPHA / BETA - 1.0))


def gao_scores(reach: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Noise-free scores of a Gao curve peaking at progress 1 / reach, at progress k / n."""
    progress = np.arange(1, n + 1) / n
    curve = GaoCurve(ALPHA, BETA, reach * D_STAR, 0.4, 0.3)
    return progress, np.asarray(curve(progress))


def decisions(
    rule: GaoTrend, progress: Sequence[float], scores: Sequence[float], kind: str = "rlhf"
) -> list[bool]:
    return [
        rule.observe(EvalEvent("j", kind, i + 1, float(p), float(s), 1.0)).stop
        for i, (p, s) in enumerate(zip(progress, scores, strict=True))
    ]


def first_stop(stops: Sequence[bool]) -> int | None:
    """1-based step of the first stop, or None."""
    return next((i + 1 for i, s in enumerate(stops) if s), None)


def test_defaults() -> None:
    rule = GaoTrend()
    assert rule.name == "gao-trend"
    assert (rule.alpha, rule.warmup) == (0.01, 8)
    assert rule.job_kinds == {"rlhf"}


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5])
def test_alpha_must_be_a_probability(alpha) -> None:
    with pytest.raises(ValueError, match="alpha"):
        GaoTrend(alpha=alpha)


@pytest.mark.parametrize("warmup", [3, 0, -1])
def test_warmup_needs_three_coefficients_and_a_residual(warmup) -> None:
    with pytest.raises(ValueError, match="warmup"):
        GaoTrend(warmup=warmup)


def test_smallest_valid_warmup() -> None:
    assert GaoTrend(warmup=4).warmup == 4


def test_stops_on_a_hacking_curve_after_its_peak_and_not_before() -> None:
    # Peak at progress 2/3; with 20 evals the first eval past it is step 14 (p = 0.70).
    progress, scores = gao_scores(reach=1.5, n=20)
    assert int(np.argmax(scores)) == 12  # step 13 (p = 0.65) is the last before the peak
    stops = decisions(GaoTrend(), progress, scores)
    assert first_stop(stops) == 14
    assert progress[13] > 2 / 3 > progress[12]


def test_no_stop_before_warmup_even_on_a_declining_curve() -> None:
    # Peak at 1/4 = step 5: steps 6 and 7 decline, but the fit waits for 8 evals.
    progress, scores = gao_scores(reach=4.0, n=20)
    assert int(np.argmax(scores)) == 4
    assert scores[6] < scores[5] < scores[4]
    stops = decisions(GaoTrend(warmup=8), progress, scores)
    assert stops[:7] == [False] * 7
    assert first_stop(stops) == 8
    # A longer warm-up waits longer, on the same curve.
    assert first_stop(decisions(GaoTrend(warmup=12), progress, scores)) == 12


@pytest.mark.parametrize("reach", [0.2, 0.5, 0.9])
def test_never_stops_a_healthy_rising_curve(reach) -> None:
    progress, scores = gao_scores(reach=reach, n=30)
    assert np.all(np.diff(scores) > 0)
    assert not any(decisions(GaoTrend(), progress, scores))


def test_only_watches_its_job_kinds() -> None:
    progress, scores = gao_scores(reach=3.0, n=20)
    assert not any(decisions(GaoTrend(), progress, scores, kind="dpo"))
    assert first_stop(decisions(GaoTrend(job_kinds=("dpo",)), progress, scores, kind="dpo")) == 8


def test_state_is_per_job() -> None:
    rule = GaoTrend()
    progress, falling = gao_scores(reach=3.0, n=20)
    _, rising = gao_scores(reach=0.5, n=20)
    for i in range(7):  # interleave two jobs below warm-up
        assert not rule.observe(EvalEvent("a", "rlhf", i + 1, progress[i], falling[i], 1.0)).stop
        assert not rule.observe(EvalEvent("b", "rlhf", i + 1, progress[i], rising[i], 1.0)).stop
    assert not rule.observe(EvalEvent("b", "rlhf", 8, progress[7], rising[7], 1.0)).stop
    assert rule.observe(EvalEvent("a", "rlhf", 8, progress[7], falling[7], 1.0)).stop
    rule.forget("a")  # a finished job's history is dropped: a new job of that id starts over
    assert not rule.observe(EvalEvent("a", "rlhf", 1, progress[0], falling[0], 1.0)).stop


# --- slope_t_statistic ---------------------------------------------------------------------------

WIGGLE = np.array([0.01, -0.01] * 6)


def test_slope_t_of_a_rising_line_is_positive() -> None:
    p = np.arange(1, 13) / 12
    t = slope_t_statistic(p, 0.2 + 0.5 * p + WIGGLE)
    assert np.isfinite(t) and t > 0


def test_slope_t_of_a_falling_line_is_negative() -> None:
    p = np.arange(1, 13) / 12
    t = slope_t_statistic(p, 0.8 - 0.5 * p + WIGGLE)
    assert np.isfinite(t) and t < 0


def test_slope_t_of_a_rise_then_fall_is_negative_at_the_end() -> None:
    p, s = gao_scores(reach=2.0, n=12)
    t = slope_t_statistic(p, s + WIGGLE * 0.1)
    assert t < -stats.t.ppf(0.99, 12 - 3)


def test_slope_t_is_exactly_signed_infinite_or_huge_without_noise() -> None:
    p, s = gao_scores(reach=3.0, n=12)
    assert slope_t_statistic(p, s) < -1e6
    p, s = gao_scores(reach=0.5, n=12)
    assert slope_t_statistic(p, s) > 1e6


def test_slope_t_matches_a_hand_fit() -> None:
    # Independent computation with numpy: OLS on [1, p, -p ln p], slope = a1 - a2 (ln p_n + 1).
    rng = np.random.default_rng(0)
    p = np.arange(1, 11) / 10
    s = 0.3 + 0.4 * p + 0.2 * p * np.log(p) + rng.normal(0, 0.02, p.size)
    x = np.column_stack([np.ones_like(p), p, -p * np.log(p)])
    coef = np.linalg.solve(x.T @ x, x.T @ s)
    resid = s - x @ coef
    sigma2 = resid @ resid / (p.size - 3)
    g = np.array([0.0, 1.0, -(np.log(p[-1]) + 1.0)])
    expected = (g @ coef) / np.sqrt(g @ np.linalg.inv(x.T @ x) @ g * sigma2)
    assert slope_t_statistic(p, s) == pytest.approx(expected, rel=1e-9)
