"""The EvalStop paper's competitors: fixed-progress and loss-plateau stop rules."""

from __future__ import annotations

import pytest
from stop_events import events, first_stop, interleaved_stops

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.stopping.competitors import FixedProgress, LossPlateau
from rlguard.cluster.stopping.evalstop import EvalStop


# -- FixedProgress ---------------------------------------------------------------------------------
def test_fixed_progress_name_and_defaults() -> None:
    rule = FixedProgress()
    assert rule.name == "fixed-progress"
    assert (rule.at_progress, rule.min_delta) == (0.5, 0.0)
    assert rule.job_kinds == {"rlhf"}


def test_fixed_progress_stops_without_a_new_best_at_the_check() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.35, 0.6, 0.7, 0.8, 0.9, 1.0]  # progress 0.5 at step 5
    rule = FixedProgress()
    decisions = [rule.observe(ev) for ev in events(scores, n_evals=10)]
    assert [d.stop for d in decisions].index(True) == 4
    assert "0.50" in decisions[4].reason


def test_fixed_progress_continues_on_a_new_best_at_the_check() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.45, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert first_stop(FixedProgress(), events(scores, n_evals=10)) is None


def test_fixed_progress_checks_exactly_once() -> None:
    rule = FixedProgress()
    scores = [0.1, 0.2, 0.3, 0.4, 0.45] + [0.0] * 20  # later evals all far below the best
    decisions = [rule.observe(ev).stop for ev in events(scores, n_evals=10)]
    assert not any(decisions)


def test_fixed_progress_ignores_evals_before_the_check() -> None:
    scores = [0.9, 0.1, 0.05, 0.01, 0.95, 0.5]  # deep declines before progress 0.5
    assert first_stop(FixedProgress(), events(scores, n_evals=10)) is None


def test_fixed_progress_a_tie_is_not_a_new_best() -> None:
    assert first_stop(FixedProgress(), events([0.1, 0.2, 0.4, 0.3, 0.4], n_evals=10)) == 5


def test_fixed_progress_min_delta() -> None:
    scores = [0.1, 0.2, 0.3, 0.4, 0.42]
    assert first_stop(FixedProgress(min_delta=0.05), events(scores, n_evals=10)) == 5
    assert first_stop(FixedProgress(min_delta=0.01), events(scores, n_evals=10)) is None


def test_fixed_progress_checks_at_the_first_eval_past_the_point() -> None:
    # 3 evals: progress 1/3, 2/3, 1; the check is at 2/3
    assert first_stop(FixedProgress(), events([0.5, 0.4, 0.9], n_evals=3)) == 2
    assert first_stop(FixedProgress(), events([0.5, 0.6, 0.1], n_evals=3)) is None


def test_fixed_progress_tolerates_float_error_in_progress() -> None:
    progress = 1 - 0.9  # 0.09999999999999998
    assert progress < 0.1
    rule = FixedProgress(at_progress=0.1)
    assert not rule.observe(EvalEvent("j", "rlhf", 1, progress, 0.5, 1.0)).stop  # the check
    assert not rule.observe(EvalEvent("j", "rlhf", 2, 0.2, 0.0, 1.0)).stop  # already checked


def test_fixed_progress_first_eval_past_the_point_has_nothing_to_beat() -> None:
    assert first_stop(FixedProgress(at_progress=0.05), events([0.3, 0.1, 0.0], n_evals=10)) is None


def test_fixed_progress_jobs_are_independent_when_interleaved() -> None:
    a = events([0.4, 0.3], n_evals=4, job_id="a")  # check at step 2: no new best
    b = events([0.1, 0.2], n_evals=4, job_id="b")  # check at step 2: new best
    rule = FixedProgress()
    stops = interleaved_stops(rule, a, b)
    assert stops == [("a", 2)]


def test_fixed_progress_other_job_kinds_never_stop() -> None:
    rule = FixedProgress()
    assert first_stop(rule, events([0.9, 0.1, 0.1, 0.1], kind="dpo")) is None
    assert rule._state == {}


def test_fixed_progress_forget_drops_the_jobs_state() -> None:
    rule = FixedProgress()
    early, check = events([0.9, 0.5], n_evals=4)
    assert not rule.observe(early).stop
    rule.forget("j")
    assert "j" not in rule._state
    assert not rule.observe(check).stop  # fresh state: the best of earlier evals is -inf


# -- LossPlateau -----------------------------------------------------------------------------------
def test_loss_plateau_name_and_defaults() -> None:
    rule = LossPlateau()
    assert rule.name == "loss-plateau"
    assert (rule.window, rule.rel_tol) == (5, 0.01)
    assert rule.job_kinds == {"rlhf"}


def test_loss_plateau_falling_loss_never_stops() -> None:
    losses = [2.0 * 0.9**i for i in range(30)]  # 41% better every 5 evals
    assert first_stop(LossPlateau(), events(losses=losses)) is None


@pytest.mark.parametrize("window", [1, 3, 5])
def test_loss_plateau_flat_loss_stops_after_window_plus_one_evals(window: int) -> None:
    rule = LossPlateau(window=window)
    decisions = [rule.observe(ev) for ev in events(losses=[1.0] * 10)]
    assert [d.stop for d in decisions].index(True) == window
    assert f"over {window} evals" in decisions[window].reason


def test_loss_plateau_after_a_fall() -> None:
    losses = [1.0, 0.8, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5]
    # window 3: eval 6 compares 0.6 -> 0.5 (16.7%), eval 7 compares 0.5 -> 0.5 (0%)
    assert first_stop(LossPlateau(window=3), events(losses=losses)) == 7


def test_loss_plateau_improvement_of_exactly_rel_tol_is_not_a_plateau() -> None:
    assert first_stop(LossPlateau(window=1, rel_tol=0.5), events(losses=[1.0, 0.5])) is None
    assert first_stop(LossPlateau(window=1, rel_tol=0.5), events(losses=[1.0, 0.75])) == 2


def test_loss_plateau_rel_tol_0_stops_only_on_a_rising_loss() -> None:
    assert first_stop(LossPlateau(window=2, rel_tol=0.0), events(losses=[1.0] * 6)) is None
    assert first_stop(LossPlateau(window=2, rel_tol=0.0), events(losses=[1.0, 1.0, 1.1])) == 3


def test_loss_plateau_zero_loss_does_not_divide_by_zero() -> None:
    assert first_stop(LossPlateau(window=1), events(losses=[0.0, 0.0])) == 2


def test_loss_plateau_misses_a_hacking_run_evalstop_catches() -> None:
    # reward hacking: the eval score turns over while the training loss keeps falling
    scores = [0.2, 0.3, 0.4, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15]
    losses = [1.0 * 0.9**i for i in range(10)]
    assert first_stop(LossPlateau(), events(scores, losses, job_id="h")) is None
    assert first_stop(EvalStop(k=3), events(scores, losses, job_id="h")) == 7


def test_loss_plateau_jobs_are_independent_when_interleaved() -> None:
    falling = events(losses=[1.0, 0.5, 0.25], job_id="a")
    flat = events(losses=[0.1, 0.1, 0.1], job_id="b")
    rule = LossPlateau(window=2)
    stops = [
        (ev.job_id, ev.step)
        for pair in zip(falling, flat, strict=True)
        for ev in pair
        if rule.observe(ev).stop
    ]
    assert stops == [("b", 3)]


def test_loss_plateau_other_job_kinds_never_stop() -> None:
    rule = LossPlateau(window=1)
    assert first_stop(rule, events(losses=[1.0] * 5, kind="dpo")) is None
    assert rule._state == {}


def test_loss_plateau_forget_drops_the_jobs_state() -> None:
    rule = LossPlateau(window=2)
    evs = events(losses=[1.0, 1.0, 1.0])
    assert not rule.observe(evs[0]).stop
    assert not rule.observe(evs[1]).stop
    rule.forget("j")
    assert "j" not in rule._state
    assert not rule.observe(evs[2]).stop  # one loss in a fresh window: too early to judge


# -- validation ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (FixedProgress, {"at_progress": 0.0}, r"at_progress must be in \(0, 1\], got 0\.0"),
        (FixedProgress, {"at_progress": 1.5}, r"at_progress must be in \(0, 1\], got 1\.5"),
        (FixedProgress, {"at_progress": -0.2}, r"at_progress must be in \(0, 1\], got -0\.2"),
        (FixedProgress, {"at_progress": float("nan")}, r"at_progress .* got nan"),
        (FixedProgress, {"min_delta": -0.1}, r"min_delta must be >= 0, got -0\.1"),
        (LossPlateau, {"window": 0}, r"window must be >= 1, got 0"),
        (LossPlateau, {"rel_tol": -0.01}, r"rel_tol must be >= 0, got -0\.01"),
        (LossPlateau, {"rel_tol": float("nan")}, r"rel_tol must be >= 0, got nan"),
    ],
)
def test_invalid_arguments(cls: type[StopRule], kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


def test_at_progress_1_is_valid() -> None:
    assert FixedProgress(at_progress=1.0).at_progress == 1.0
