"""Paired statistics over seeds: relative gain, its t-interval, the paired t-test p-value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rlguard.cluster.experiments.stats import mean_or_none, paired_gain


def test_paired_gain_on_hand_numbers() -> None:
    baseline = [10.0, 20.0, 30.0, 40.0]
    treatment = [9.0, 15.0, 30.0, 36.0]
    # per-seed gains 1 - t/b: 0.1, 0.25, 0.0, 0.1 -> mean 0.1125
    out = paired_gain(baseline, treatment)
    assert out["gain"] == pytest.approx(0.1125)
    gains = np.array([0.1, 0.25, 0.0, 0.1])
    half = stats.t.ppf(0.975, 3) * gains.std(ddof=1) / math.sqrt(4)
    assert out["ci_low"] == pytest.approx(0.1125 - half)
    assert out["ci_high"] == pytest.approx(0.1125 + half)
    assert out["ci_low"] < out["gain"] < out["ci_high"]
    assert out["p"] == pytest.approx(stats.ttest_rel(baseline, treatment).pvalue)
    assert 0 < out["p"] < 1


def test_a_worse_treatment_has_a_negative_gain() -> None:
    out = paired_gain([10.0, 10.0, 10.0], [11.0, 12.0, 10.5])
    assert out["gain"] == pytest.approx(-(0.1 + 0.2 + 0.05) / 3)
    assert out["ci_low"] <= out["gain"] <= out["ci_high"]
    assert out["p"] == pytest.approx(stats.ttest_rel([10.0, 10.0, 10.0], [11.0, 12.0, 10.5]).pvalue)


def test_identical_inputs_have_no_p_value() -> None:
    out = paired_gain([3.0, 4.0, 5.0], [3.0, 4.0, 5.0])
    assert out == {"gain": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p": None}


def test_single_seed_has_no_p_value() -> None:
    out = paired_gain([10.0], [8.0])
    assert out["gain"] == pytest.approx(0.2)
    assert out["ci_low"] == out["ci_high"] == pytest.approx(0.2)
    assert out["p"] is None


def test_constant_gain_has_a_degenerate_interval() -> None:
    # Every seed gains exactly 50%: zero spread, so the interval collapses onto the mean.
    out = paired_gain([2.0, 4.0, 8.0], [1.0, 2.0, 4.0])
    assert out["gain"] == pytest.approx(0.5)
    assert out["ci_low"] == pytest.approx(0.5)
    assert out["ci_high"] == pytest.approx(0.5)


def test_zero_baseline_counts_as_no_gain() -> None:
    out = paired_gain([0.0, 10.0], [5.0, 5.0])
    assert out["gain"] == pytest.approx(0.25)  # (0 + 0.5) / 2


def test_mean_or_none() -> None:
    assert mean_or_none([1.0, None, 3.0]) == 2.0
    assert mean_or_none([None, None]) is None
    assert mean_or_none([]) is None
