"""The length model reproduces a step's logged mean and clip ratio (and max, below the cap)."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.errors import InputError
from rlguard.runtime.calib.lengths import fit_body
from rlguard.runtime.calib.measured import read_measured
from rlguard.runtime.calib.replay import replay
from rlguard.runtime.calib.workloads import WORKLOADS
from rlguard.runtime.sim.workload import LengthModel, PromptPool


def _draw(median: float, sigma: float, runaway: float, cap: int, prompts: int, k: int):
    model = LengthModel(
        dataset_prompts=prompts,
        response_median=median,
        response_sigma=sigma,
        runaway_p=runaway,
        max_response=cap,
    )
    return PromptPool(model, seed=7).batch(0, 0, prompts, k).lengths


@pytest.mark.parametrize(("mean", "clip"), [(230.0, 0.001), (600.0, 0.02), (1200.0, 0.15)])
def test_mean_and_clip_ratio_are_reproduced(mean: float, clip: float) -> None:
    median, sigma, runaway = fit_body(mean, 2048, clip, 0.45, 2048, 20_000)
    lengths = _draw(median, sigma, runaway, 2048, 4000, 5)
    assert lengths.mean() == pytest.approx(mean, rel=0.03)
    assert (lengths == 2048).mean() == pytest.approx(clip, rel=0.2, abs=3e-4)


def test_a_short_cap_that_clips_most_responses() -> None:
    """A 0.5B GRPO step capped at 192 tokens (play-verl's log): 89% at the cap, mean 187.6. The
    body's median lies past the cap, where the search for it must reach."""
    median, sigma, runaway = fit_body(187.629, 192, 0.893, 0.45, 192.0, 512)
    assert median > 192
    lengths = _draw(median, sigma, runaway, 192, 4000, 2)
    assert lengths.mean() == pytest.approx(187.629, rel=0.01)
    assert (lengths == 192).mean() == pytest.approx(0.893, abs=0.02)


def test_below_the_cap_the_max_sets_the_spread() -> None:
    median, sigma, runaway = fit_body(300.0, 2048, 0.0, 0.45, 900.0, 5120)
    assert runaway == 0
    lengths = _draw(median, sigma, runaway, 2048, 1024, 5)
    assert lengths.mean() == pytest.approx(300, rel=0.05)
    assert np.max(lengths) == pytest.approx(900, rel=0.25)


def test_impossible_statistics_are_refused() -> None:
    with pytest.raises(InputError, match="must be in"):
        fit_body(3000.0, 2048, 0.0, 0.45, None, 100)
    with pytest.raises(InputError, match="no length model"):
        fit_body(100.0, 2048, 0.5, 0.45, None, 100)  # half at the cap: mean >= 1024


def test_a_max_at_the_cap_counts_one_clipped_response() -> None:
    # verl rounds the clip ratio to 0.000 for one response in 5,120; its max says one hit the cap
    _, _, runaway = fit_body(195.0, 1024, 0.0, 0.45, 1024.0, 5120)
    assert 0 < runaway <= 1 / 5120  # the body's own tail may clip a little too


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_each_paper_workload_has_its_mean_and_clip_ratio(name: str) -> None:
    stats = WORKLOADS[name]
    model = stats.length_model(100_000)
    batch = PromptPool(model, seed=3).batch(0, 0, 20_000, 5)
    assert batch.lengths.mean() == pytest.approx(stats.response_length_mean, rel=0.03)
    clipped = (batch.lengths == model.max_response).mean()
    assert clipped == pytest.approx(stats.response_clip_ratio, rel=0.2, abs=4e-4)
    assert stats.describe()["source"]


def test_another_draw_is_another_batch_of_the_same_step() -> None:
    """`replay(row, draw)`: draw 0 is the row's own batch; another draw redraws its lengths from
    the same logged statistics (what the benchmark's length-draw check varies)."""
    row = read_measured()[0]
    own, again, other = replay(row), replay(row, 0), replay(row, 3)
    assert np.array_equal(own.batch.lengths, again.batch.lengths)
    assert not np.array_equal(own.batch.lengths, other.batch.lengths)
    for job in (own, other):
        assert job.batch.lengths.mean() == pytest.approx(row.response_length_mean, rel=0.1)
