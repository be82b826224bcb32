"""Gao's fit and the per-run verdicts the lab reports."""

from dataclasses import asdict

import numpy as np
import pytest

from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import gao_rl
from rlguard.lab.analysis import drop_fraction, smooth, summarize, summarize_run
from rlguard.lab.experiment import measured_curves
from rlguard.lab.fit import fit_gao


def test_the_fit_recovers_gaos_parameters():
    d = np.linspace(0, 4, 15)
    fit = fit_gao(d**2, 0.3 + gao_rl(d, 0.35, 0.15))
    assert fit.alpha == pytest.approx(0.35, abs=1e-9)
    assert fit.beta == pytest.approx(0.15, abs=1e-9)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.d_star == pytest.approx(np.exp(0.35 / 0.15 - 1))


def test_the_fit_of_a_line_is_poor_when_gold_is_flat_noise():
    rng = np.random.default_rng(0)
    fit = fit_gao(np.linspace(0, 9, 15), 0.4 + rng.normal(0, 0.02, 15))
    assert fit.r2 < 0.5


def test_drop_fraction_and_smoothing():
    assert drop_fraction(0.4, 0.6, 0.5) == pytest.approx(0.5)
    assert drop_fraction(0.4, 0.4, 0.2) == 0.0
    assert smooth([0, 3, 0, 3]).tolist() == pytest.approx([1.5, 1.0, 2.0, 1.5])


def record(method, seed, gold, proxy, stops):
    steps = list(range(0, 4 * len(gold), 4))
    kl = [0.5 * s for s in steps]
    return {
        "method": method,
        "seed": seed,
        "curve": {
            "step": steps,
            "progress": [s / steps[-1] for s in steps],
            "gold": gold,
            "proxy": proxy,
            "kl": kl,
            "satisfaction": [0.3] * (len(gold) - 1) + [0.6],
        },
        "stops": stops,
    }


HACKING = record(
    "ppo",
    0,
    [0.3, 0.4, 0.5, 0.55, 0.5, 0.4, 0.3, 0.25],
    [0, 1, 2, 3, 4, 5, 6, 7],
    {"evalstop": 20, "gao-trend": None},
)
HEALTHY = record(
    "crpg",
    0,
    [0.3, 0.4, 0.5, 0.55, 0.56, 0.57, 0.58, 0.58],
    [0, 1, 1, 2, 2, 2, 2, 2],
    {"evalstop": None, "gao-trend": None},
)


def test_a_run_that_gives_back_its_gain_is_hacked_and_a_rising_one_is_not():
    hacked, healthy = summarize_run(HACKING), summarize_run(HEALTHY)
    assert hacked["hacked"] and not healthy["hacked"]
    assert hacked["gao_turns_over"] and not healthy["gao_turns_over"]
    assert hacked["gold_drop_frac"] > 1.0
    assert hacked["stops"]["evalstop"]["kept_gold_vs_peak"] == pytest.approx(1.0)
    assert summarize_run(record("ppo", 1, HACKING["curve"]["gold"], [0] * 8, {"evalstop": 4}))[
        "stops"
    ]["evalstop"]["kept_gold_vs_peak"] == pytest.approx(0.4 / 0.55)


def test_the_summary_has_the_issue_schema():
    result = summarize([HACKING, HEALTHY])
    keys = {
        "proxy_gain",
        "gold_peak",
        "gold_final",
        "gold_drop_frac",
        "gao_alpha",
        "gao_beta",
        "gao_r2",
        "satisfaction_start",
        "satisfaction_end",
        "seeds_hacked",
        "seeds_turned_over",
        "seeds",
    }
    assert keys <= set(result["methods"]["ppo"])
    assert result["methods"]["ppo"]["seeds_hacked"] == 1
    assert result["methods"]["ppo"]["seeds_turned_over"] == 1
    assert result["methods"]["crpg"]["seeds_turned_over"] == 0
    one_seed = fit_gao(HACKING["curve"]["kl"], HACKING["curve"]["gold"])
    assert result["methods"]["ppo"]["gao_r2_mean_curve"] == pytest.approx(one_seed.r2)
    assert result["stops"]["evalstop"]["ppo"]["stopped_seeds"] == 1
    assert result["stops"]["evalstop"]["crpg"] == {
        "stopped_seeds": 0,
        "kept_gold_vs_peak": None,
        "kept_gold_vs_peak_min": None,
        "missed_hacked": 0,
        "stopped_not_hacked": 0,
        "stop_steps": [None],
    }
    assert result["stops"]["gao-trend"]["ppo"]["missed_hacked"] == 1


def test_a_stop_of_a_run_that_did_not_hack_is_counted_as_a_mistake():
    stops = {"evalstop": 16, "gao-trend": None}
    stopped_healthy = {**HEALTHY, "stops": stops}
    early = record(
        "ppo", 1, HACKING["curve"]["gold"], HACKING["curve"]["proxy"], {**stops, "evalstop": 4}
    )
    result = summarize([stopped_healthy, HACKING, early])
    assert result["stops"]["evalstop"]["crpg"]["stopped_not_hacked"] == 1
    ppo = result["stops"]["evalstop"]["ppo"]
    assert ppo["stopped_not_hacked"] == 0 and ppo["missed_hacked"] == 0
    assert ppo["kept_gold_vs_peak_min"] == pytest.approx(0.4 / 0.55)
    assert ppo["kept_gold_vs_peak"] == pytest.approx((1.0 + 0.4 / 0.55) / 2)


def test_the_start_is_the_initial_policys_eval_not_smoothed():
    assert summarize_run(HACKING)["gold_start"] == 0.3


def test_exported_curves_are_readable_by_the_cluster_simulator(tmp_path):
    from rlguard.cluster.curve_file import write_curves

    write_curves(tmp_path / "c.json", measured_curves([HACKING, HEALTHY]), source="test")
    curves = read_curves(tmp_path / "c.json").curves
    assert [c.hacks for c in curves] == [True, False]
    assert curves[0].score == tuple(HACKING["curve"]["gold"])


def test_the_report_has_every_method_rule_and_run():
    from rlguard.lab.experiment import LabConfig
    from rlguard.lab.report import render

    result = {"config": asdict(LabConfig(seeds=1)), **summarize([HACKING, HEALTHY])}
    report = render(result, [HACKING, HEALTHY])
    assert "| ppo |" in report and "| crpg |" in report
    assert "| evalstop | ppo | 1 |" in report
    assert report.count("\n| ppo | 0 |") == 1  # the per-run row
