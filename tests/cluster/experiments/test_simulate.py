"""Grids of runs (seeds x bases x rules), their aggregation and sweeps; in-process and over Ray.

The Ray test (test_ray_fan_out_matches_in_process) starts a local Ray and takes ~10-20 s; select
or skip it with `-k ray` / `-k "not ray"`.
"""

from __future__ import annotations

import pytest
from scipy import stats

from rlguard.cluster.experiments.runner import RunSpec, run_spec
from rlguard.cluster.experiments.simulate import MEAN_KEYS, Grid, aggregate, run_grid
from rlguard.cluster.experiments.sweeps import parse_values, sweep
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.errors import InputError

GAIN_KEYS = ("jct_gain", "jct_gain_ci", "p_jct", "waste_cut", "waste_cut_ci", "p_waste")


def row(seed: int, rule: str, base: str, jct: float, waste: float, **extra) -> dict:
    r = {k: 0.0 for k in MEAN_KEYS}
    r.update(seed=seed, rule=rule, base=base, jct_mean_h=jct, waste_gpu_h=waste, **extra)
    return r


def test_aggregate_keys_means_and_paired_gains() -> None:
    rows = [
        row(0, "none", "fifo", 10.0, 4.0, precision=None),
        row(1, "none", "fifo", 20.0, 8.0, precision=None),
        row(2, "none", "fifo", 30.0, 6.0, precision=None),
        row(0, "evalstop", "fifo", 9.0, 2.0, precision=1.0),
        row(1, "evalstop", "fifo", 15.0, 4.0, precision=None),
        row(2, "evalstop", "fifo", 30.0, 3.0, precision=0.5),
        row(0, "none", "srtf-est", 5.0, 1.0),
    ]
    results = aggregate(rows)
    assert set(results) == {"none(fifo)", "evalstop(fifo)", "none(srtf-est)"}

    none = results["none(fifo)"]
    assert none["seeds"] == 3
    assert none["jct_mean_h"] == pytest.approx(20.0)
    assert none["waste_gpu_h"] == pytest.approx(6.0)
    assert none["precision"] is None
    assert not any(k in none for k in GAIN_KEYS)

    es = results["evalstop(fifo)"]
    assert es["jct_mean_h"] == pytest.approx(18.0)
    assert es["precision"] == pytest.approx(0.75)  # None seeds are left out of the mean
    assert es["jct_gain"] == pytest.approx((0.1 + 0.25 + 0.0) / 3)
    assert es["waste_cut"] == pytest.approx(0.5)
    assert es["p_jct"] == pytest.approx(stats.ttest_rel([10, 20, 30], [9, 15, 30]).pvalue)
    assert es["p_waste"] == pytest.approx(stats.ttest_rel([4, 8, 6], [2, 4, 3]).pvalue)
    low, high = es["jct_gain_ci"]
    assert low <= es["jct_gain"] <= high

    # A base with only `none` gets no gains.
    assert not any(k in results["none(srtf-est)"] for k in GAIN_KEYS)


def test_aggregate_pairs_only_shared_seeds() -> None:
    rows = [
        row(0, "none", "fifo", 10.0, 4.0),
        row(1, "none", "fifo", 20.0, 8.0),
        row(1, "evalstop", "fifo", 10.0, 4.0),
    ]
    es = aggregate(rows)["evalstop(fifo)"]
    assert es["seeds"] == 1
    assert es["jct_gain"] == pytest.approx(0.5)
    assert es["p_jct"] is None


def test_a_rule_without_its_baseline_gets_no_gains() -> None:
    results = aggregate([row(0, "evalstop", "fifo", 10.0, 4.0)])
    assert not any(k in results["evalstop(fifo)"] for k in GAIN_KEYS)


# --- real runs -----------------------------------------------------------------------------------

GRID = Grid(
    scenario=ScenarioConfig(n_jobs=40),
    seeds=[0, 1],
    bases=["fifo"],
    rules=["evalstop"],
)


@pytest.fixture(scope="module")
def in_process_rows() -> list[dict]:
    return run_grid(GRID, workers=1, quiet=True)


def test_grid_specs_always_include_the_baseline() -> None:
    specs = GRID.specs()
    assert [(s.seed, s.base, s.rules) for s in specs] == [
        (0, "fifo", ("none", "evalstop")),
        (1, "fifo", ("none", "evalstop")),
    ]


def test_in_process_grid_is_reproducible(in_process_rows) -> None:
    again = run_grid(GRID, workers=1, quiet=True)
    assert again == in_process_rows
    assert len(in_process_rows) == 4  # 2 seeds x (none, evalstop)
    assert {(r["seed"], r["rule"], r["base"]) for r in in_process_rows} == {
        (s, rule, "fifo") for s in (0, 1) for rule in ("none", "evalstop")
    }
    for r in in_process_rows:
        assert r["jobs"] == 40
        assert len(r["jct_h"]) == 40
        assert "curves" not in r


def test_rows_of_one_seed_share_the_workload(in_process_rows) -> None:
    by = {(r["seed"], r["rule"]): r for r in in_process_rows}
    for seed in (0, 1):
        assert by[(seed, "none")]["hacking_jobs"] == by[(seed, "evalstop")]["hacking_jobs"]
        assert by[(seed, "none")]["rlhf_jobs"] == by[(seed, "evalstop")]["rlhf_jobs"]
        assert by[(seed, "none")]["stopped"] == 0
    assert by[(0, "none")]["jct_h"] != by[(1, "none")]["jct_h"]


def test_aggregated_grid(in_process_rows) -> None:
    results = aggregate(in_process_rows)
    assert set(results) == {"none(fifo)", "evalstop(fifo)"}
    assert results["evalstop(fifo)"]["seeds"] == 2
    for k in ("jct_gain", "waste_cut", "p_jct", "p_waste"):
        assert k in results["evalstop(fifo)"]
    assert results["evalstop(fifo)"]["waste_cut"] > 0  # stopping hackers cuts their tails


def test_keep_curves_only_on_the_first_seed() -> None:
    specs = Grid(GRID.scenario, [0, 1], ["fifo"], ["evalstop"], keep_curves=3).specs()
    assert [s.keep_curves for s in specs] == [3, 0]
    rows = run_spec(RunSpec(GRID.scenario, 0, "fifo", ("none", "evalstop"), keep_curves=3))
    for r in rows:
        assert len(r["curves"]) == 3
        for c in r["curves"]:
            assert set(c) == {
                "job_id",
                "hacking",
                "stopped",
                "progress",
                "observed",
                "true",
                "delivered",
            }
            assert 1 <= len(c["observed"]) <= len(c["progress"])
            assert 0 <= c["delivered"] < len(c["observed"])


def test_sweep_over_k() -> None:
    rows = sweep(GRID, "k", [2, 3], workers=1, quiet=True)
    assert len(rows) == 4  # 2 values x (none, evalstop)
    for r in rows:
        assert {"sweep", "value", "key", "rule", "base"} <= set(r)
        assert r["sweep"] == "k"
        assert r["key"] == f"{r['rule']}({r['base']})"
        assert r["base"] == "fifo"
    assert {(r["value"], r["rule"]) for r in rows} == {
        (v, rule) for v in (2, 3) for rule in ("none", "evalstop")
    }
    none = [r for r in rows if r["rule"] == "none"]
    assert none[0]["jct_mean_h"] == none[1]["jct_mean_h"]  # k does not touch the baseline


def test_sweep_over_a_scenario_knob_revalidates() -> None:
    rows = sweep(GRID, "noise", [0.0], workers=1, quiet=True)
    assert {r["value"] for r in rows} == {0.0}
    with pytest.raises(ValueError):
        sweep(GRID, "noise", [-1.0], workers=1, quiet=True)


def test_parse_values() -> None:
    assert parse_values("k", "2, 3") == [2, 3]
    assert parse_values("noise", "0,0.05") == [0.0, 0.05]
    assert parse_values("base", "fifo") == ["fifo"]
    assert parse_values("k", None) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(InputError, match="--values"):
        parse_values("k", "a,b")
    with pytest.raises(InputError, match="nope"):
        parse_values("base", "fifo,nope")


def test_ray_fan_out_matches_in_process(in_process_rows) -> None:
    pytest.importorskip("ray")
    assert run_grid(GRID, workers=2, quiet=True) == in_process_rows
