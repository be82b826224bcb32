"""GaoTrend on a run evaluated before its first step (progress 0), as the trainer does."""

import numpy as np

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.gao_trend import GaoTrend, slope_t_statistic


def test_an_eval_at_progress_zero_is_a_finite_point():
    progress = np.array([0.0, 0.2, 0.4, 0.6, 0.8])
    rising = 0.3 + 0.2 * progress
    noise = np.array([0.0, 0.001, -0.001, 0.001, 0.0])
    assert np.isfinite(slope_t_statistic(progress, rising + noise))


def test_a_run_falling_after_its_start_eval_is_stopped():
    rule = GaoTrend()
    scores = [0.3, 0.45, 0.5, 0.48, 0.42, 0.35, 0.3, 0.25, 0.2, 0.15]
    stops = [
        rule.observe(EvalEvent("j", "rlhf", i, i / 9, s, 0.0)).stop for i, s in enumerate(scores)
    ]
    assert any(stops) and not any(stops[:4])
