"""The reduced lab experiment, end to end: on the quick world (built once per test run by
tests/quick_world.py), PPO hacks its proxy, CGPO does not, the stop rules catch the hacking run,
and the cluster simulator replays the measured curves.

Directions only, and only those that hold in every build of the small world measured: the full
acceptance thresholds and the shape of Gao's curve are measured by benchmarks/bench_lab.py on the
full world (docs/lab.md). The quick world's build turns on float order (AVX-512 or AVX2 kernels,
one thread or two) and its data seed, and so does PPO's shape in it: on an AVX2 machine the
suite's world (data seed 0) gave PPO no early gain at all (gold 0.480 -> 0.466 smoothed peak ->
0.428, proxy +1.72) and Gao's fit did not turn over; worlds of data seeds 1 and 2 rose and fell
(0.445 -> 0.528 -> 0.503; 0.435 -> 0.452 -> 0.431), and only seed 1's fit turned over; earlier
AVX-512 builds turned over in 6 of 6 seeds. In all of them PPO gained the most proxy
and ended with the least gold, CGPO ended above PPO's best with more constraints satisfied,
EvalStop (k = 2) stopped a PPO run near its best, no rule stopped CGPO, and no CRPG run turned
over.
"""

import json

import pytest

from cli_runner import cli
from quick_world import quick_world_copy
from rlguard.lab.experiment import overoptimization, quick_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick-lab")
    quick_world_copy(tmp_path_factory, out / "world")
    return out, overoptimization(quick_config(), out, workers=2, quiet=True)


def test_ppo_gains_the_most_proxy_and_ends_with_the_least_gold(lab):
    methods = lab[1]["methods"]
    ppo, cgpo = methods["ppo"], [methods["crpg"], methods["crraft"]]
    assert ppo["proxy_gain"] > max(m["proxy_gain"] for m in cgpo) > 0
    assert ppo["gold_final"] < min(m["gold_final"] for m in cgpo)
    assert ppo["gold_final"] < ppo["gold_peak"]  # it gave back gold it had held


def test_no_cgpo_run_turns_over(lab):
    assert lab[1]["methods"]["crpg"]["seeds_turned_over"] == 0


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
