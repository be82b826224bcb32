"""The reduced lab experiment, end to end: a world is built, PPO hacks its proxy, CGPO does not,
the stop rules catch the hacking run, and the cluster simulator replays the measured curves.

Directions only: a small world is too noisy for the full acceptance thresholds (those are
measured by benchmarks/bench_lab.py and reported in docs/lab.md). Two seeds, because one seed's
outcome turns on floating-point order: the same seed 0 passes with AVX2 kernels and misses the
EvalStop stop with AVX-512 ones. PPO's effects are asserted on the seeds' means and on at least
one seed, CGPO's on every seed: over 6 seeds on AVX-512 (docs/lab.md) every PPO run hacked and
turned over, but in another run of the suite seed 1 hacked only at the margin (gold 0.458 -> 0.542
-> 0.508), so "every seed" would again turn on float order. EvalStop k = 2 stopped 5 of 6, no CGPO
run was stopped and no CRPG run turned over; Gao's R^2 (0.21-0.72) and CRPG's beta below PPO's
(3 of 6) were coin flips, so they are not asserted here.
"""

import json

import pytest

from cli_runner import cli
from rlguard.lab.experiment import overoptimization, quick_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick-lab")
    return out, overoptimization(quick_config(), out, workers=2, quiet=True)


def test_ppo_raises_the_proxy_while_gold_rises_then_falls(lab):
    ppo = lab[1]["methods"]["ppo"]
    assert ppo["proxy_gain"] > 0
    assert ppo["gold_peak"] > ppo["gold_start"]
    assert ppo["gold_drop_frac"] >= 0.2 and ppo["seeds_hacked"] >= 1


def test_gaos_form_turns_over_for_ppo_only(lab):
    methods = lab[1]["methods"]
    assert methods["ppo"]["gao_beta"] > 0  # a peak at d* = exp(alpha / beta - 1)
    assert methods["ppo"]["seeds_turned_over"] >= 1  # ... inside the KL the run reached
    assert methods["crpg"]["seeds_turned_over"] == 0


def test_cgpo_ends_above_ppos_peak_and_satisfies_more_constraints(lab):
    methods = lab[1]["methods"]
    for name in ("crpg", "crraft"):
        assert methods[name]["gold_final"] >= methods["ppo"]["gold_peak"]
        assert methods[name]["satisfaction_end"] > methods[name]["satisfaction_start"]
        assert methods[name]["seeds_hacked"] == 0


def test_evalstop_stops_the_hacking_run_near_its_peak_and_no_cgpo_run(lab):
    stops = lab[1]["stops"]["evalstop-k2"]
    assert stops["ppo"]["stopped_seeds"] >= 1
    assert stops["ppo"]["kept_gold_vs_peak_min"] >= 0.95
    for rule in lab[1]["stops"].values():
        assert rule["crpg"]["stopped_seeds"] == rule["crraft"]["stopped_seeds"] == 0


def test_outputs_are_written_and_the_simulator_replays_the_curves(lab, monkeypatch, capsys):
    out, _ = lab
    for name in ("results.json", "report.md", "curves.json", "plots/ppo.png", "plots/crpg.png"):
        assert (out / name).is_file()
    curves = json.loads((out / "curves.json").read_text())["curves"]
    hacking = sum(c["hacking"] for c in curves)
    code, stdout, err = cli(
        monkeypatch,
        capsys,
        "simulate",
        "--hacking-fraction",
        str(hacking / len(curves)),
        "--curves",
        str(out / "curves.json"),
        "--seeds",
        "1",
        "--jobs",
        "60",
        "--gpus",
        "16",
        "--workers",
        "1",
        "--json",
    )
    assert code == 0, err
    payload = json.loads(stdout)
    assert payload["config"]["curves"] == str(out / "curves.json")
    assert "precision" in payload["results"]["evalstop(srtf-est)"]


def test_the_cli_resumes_the_finished_experiment_and_prints_the_json_contract(
    lab, monkeypatch, capsys
):
    out, result = lab
    code, stdout, err = cli(
        monkeypatch,
        capsys,
        "lab",
        "overoptimization",
        "--quick",
        "--out",
        str(out),
        "--json",
    )
    assert code == 0, err
    printed = json.loads(stdout)  # every run is reused: nothing is trained again
    assert printed["methods"] == json.loads(json.dumps(result["methods"]))
    assert set(printed["stops"]) == {"evalstop", "evalstop-k2", "gao-trend"}
    assert set(printed["stops"]["evalstop"]["ppo"]) >= {"stopped_seeds", "kept_gold_vs_peak"}
