"""The paper scenario's effects, in direction, on seeds never used for calibration (2000-2002)."""

from __future__ import annotations

import pytest

from rlguard.cluster.experiments.simulate import Grid, aggregate, run_grid
from rlguard.cluster.scenario import ScenarioConfig

SEEDS = [2000, 2001, 2002]
RULES = ["evalstop", "fixed-progress", "loss-plateau", "gao-trend", "gao-drop"]


def results(noise: float) -> dict[str, dict]:
    grid = Grid(ScenarioConfig(noise=noise), SEEDS, ["srtf-est"], RULES)
    return aggregate(run_grid(grid, workers=1, quiet=True))


@pytest.fixture(scope="module")
def default() -> dict[str, dict]:
    return results(0.01)


def test_evalstop_detects_hacking_and_frees_gpus(default) -> None:
    evalstop = default["evalstop(srtf-est)"]
    assert evalstop["precision"] >= 0.95 and evalstop["recall"] >= 0.95
    assert evalstop["jct_gain"] > 0 and evalstop["p_jct"] < 0.05
    assert evalstop["waste_cut"] > 0 and evalstop["p_waste"] < 0.05
    none = default["none(srtf-est)"]
    assert evalstop["quality_regret"] <= none["quality_regret"] + 1e-3


def test_competitors_fail_as_the_paper_reports(default) -> None:
    assert default["loss-plateau(srtf-est)"]["recall"] < 0.5
    fixed = default["fixed-progress(srtf-est)"]
    assert fixed["fpr"] > 5 * max(default["evalstop(srtf-est)"]["fpr"], 0.01)
    assert fixed["quality_regret"] > default["none(srtf-est)"]["quality_regret"]


@pytest.fixture(scope="module")
def noisy() -> dict[str, dict]:
    return results(0.1)


@pytest.mark.parametrize("rule", ["gao-trend", "gao-drop"])
def test_our_detectors_beat_evalstop_under_heavy_noise(noisy, rule) -> None:
    assert noisy[f"{rule}(srtf-est)"]["f1"] > noisy["evalstop(srtf-est)"]["f1"]
    assert noisy[f"{rule}(srtf-est)"]["precision"] > noisy["evalstop(srtf-est)"]["precision"]


def test_gao_drop_recalls_more_than_gao_trend_under_heavy_noise(noisy) -> None:
    assert noisy["gao-drop(srtf-est)"]["recall"] > noisy["gao-trend(srtf-est)"]["recall"]
