"""Replaying a curve file: RLHF jobs follow measured curves, deterministically, and the metrics
and stop rules run on them as on synthetic ones (`rlguard simulate --curves FILE`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from curve_builders import write_mixed

from cli_runner import cli
from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import GaoCurve, MeasuredCurve, SaturatingCurve
from rlguard.cluster.jobs import JobKind, Workload
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.traces import PACKAGED_TIRESIAS_TRACE, read_trace
from rlguard.cluster.workload import paper_workload
from rlguard.errors import InputError


@pytest.fixture(scope="module")
def curve_file(tmp_path_factory) -> Path:
    return write_mixed(tmp_path_factory.mktemp("curves") / "mixed.json", n_hacking=3, n_healthy=3)


def scenario(curve_file: Path, **changes) -> ScenarioConfig:
    return ScenarioConfig(**{"n_jobs": 120, "curves": str(curve_file), **changes})


def rlhf_rows(workload: Workload) -> list[int]:
    return [i for i, s in enumerate(workload.specs) if s.kind is JobKind.RLHF]


def test_every_rlhf_job_follows_a_curve_from_the_file(curve_file) -> None:
    by_name = {c.name: c for c in read_curves(curve_file).curves}
    workload = paper_workload(scenario(curve_file), 0)
    rows = rlhf_rows(workload)
    assert len(rows) > 60
    for row in rows:
        truth = workload.truths[row]
        curve = truth.eval_curve
        assert isinstance(curve, MeasuredCurve) and by_name[curve.name] == curve
        assert truth.hacking is curve.hacking  # the job's truth is the file's label
        np.testing.assert_allclose(truth.true_scores, curve(truth.eval_points))
        np.testing.assert_allclose(truth.observed_proxies, curve.proxy_reward(truth.eval_points, 0))
    others = [t.eval_curve for i, t in enumerate(workload.truths) if i not in set(rows)]
    assert others and all(isinstance(c, SaturatingCurve) for c in others)  # SFT/DPO unchanged
    assert {workload.truths[r].eval_curve.name for r in rows} == set(by_name)  # all get drawn


def fingerprint(workload: Workload) -> list[tuple]:
    return [
        (s.job_id, s.n_evals, getattr(t.eval_curve, "name", None), t.observed_scores.tolist())
        for s, t in zip(workload.specs, workload.truths, strict=True)
    ]


def test_replay_is_deterministic_for_a_seed(curve_file) -> None:
    cfg = scenario(curve_file)
    assert fingerprint(paper_workload(cfg, 4)) == fingerprint(paper_workload(cfg, 4))
    assert fingerprint(paper_workload(cfg, 4)) != fingerprint(paper_workload(cfg, 5))


def test_noise_on_top_is_the_noise_option(curve_file) -> None:
    quiet = paper_workload(scenario(curve_file, noise=0.0), 1)
    for row in rlhf_rows(quiet):
        truth = quiet.truths[row]
        np.testing.assert_array_equal(truth.observed_scores, truth.true_scores)
    noisy = paper_workload(scenario(curve_file, noise=0.05), 1)
    diffs = np.concatenate([t.observed_scores - t.true_scores for t in noisy.truths])
    assert 0.03 < float(np.std(diffs)) < 0.07


@pytest.mark.parametrize("fraction", [0.0, 0.3, 1.0])
def test_the_hacking_fraction_sets_the_mix(curve_file, fraction) -> None:
    workload = paper_workload(scenario(curve_file, n_jobs=400, hacking_fraction=fraction), 2)
    labels = [workload.truths[r].hacking for r in rlhf_rows(workload)]
    share = float(np.mean(labels))
    if fraction in (0.0, 1.0):
        assert share == fraction
    else:  # ~320 RLHF jobs: a binomial std of ~0.026
        assert abs(share - fraction) < 0.1


def test_a_one_kind_file_needs_the_fraction_it_can_meet(tmp_path) -> None:
    path = write_mixed(tmp_path / "healthy.json", n_hacking=0, n_healthy=2)
    with pytest.raises(InputError, match=r"healthy\.json: no hacking curves.*0\.5"):
        paper_workload(ScenarioConfig(n_jobs=20, curves=str(path)), 0)
    workload = paper_workload(ScenarioConfig(n_jobs=20, curves=str(path), hacking_fraction=0), 0)
    assert not any(t.hacking for t in workload.truths)


def test_trace_replay_takes_its_curves_from_the_file_too(curve_file) -> None:
    names = {c.name for c in read_curves(curve_file).curves}
    workload = read_trace(PACKAGED_TIRESIAS_TRACE, scenario(curve_file), 3)
    rows = rlhf_rows(workload)
    assert rows and {workload.truths[r].eval_curve.name for r in rows} <= names
    synthetic = read_trace(PACKAGED_TIRESIAS_TRACE, ScenarioConfig(), 3)
    assert all(isinstance(synthetic.truths[r].eval_curve, GaoCurve) for r in rlhf_rows(synthetic))


# --- through the CLI -----------------------------------------------------------------------------

RUN = ("--jobs", "120", "--seeds", "2", "--workers", "1", "--noise", "0", "--json")


def one_json_object(out: str) -> dict:
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    return json.loads(lines[0])


def test_simulate_reports_every_rule_on_the_measured_curves(monkeypatch, capsys, curve_file):
    code, out, _ = cli(monkeypatch, capsys, "simulate", "--curves", str(curve_file), *RUN)
    assert code == 0
    payload = one_json_object(out)
    config, results = payload["config"], payload["results"]
    assert config["curves"] == str(curve_file)
    assert config["curves_source"] == "tests: Gao-shaped runs"
    assert (config["curves_hacking"], config["curves_healthy"]) == (3, 3)
    assert {k.split("(")[0] for k in results} == {
        "none",
        "evalstop",
        "fixed-progress",
        "loss-plateau",
        "patience",
        "ema-patience",
        "gao-trend",
        "gao-drop",
    }
    for name, entry in results.items():
        assert entry["hacking_jobs"] > 0 and entry["jct_mean_h"] > 0, name
        assert entry["waste_gpu_h"] >= 0, name
    evalstop = results["evalstop(srtf-est)"]
    assert evalstop["precision"] > 0.8 and evalstop["recall"] > 0.8
    assert evalstop["fpr"] < 0.2
    assert evalstop["waste_cut"] > 0 and evalstop["jct_gain"] > 0
    assert results["none(srtf-est)"]["recall"] == 0.0


def test_trace_and_curves_together_and_the_report_names_the_file(
    monkeypatch, capsys, tmp_path, curve_file
) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_bytes(PACKAGED_TIRESIAS_TRACE.read_bytes())
    out_dir = tmp_path / "out"
    argv = ["simulate", "--trace", str(trace), "--curves", str(curve_file), "--rules", "evalstop"]
    code, out, _ = cli(monkeypatch, capsys, *argv, *RUN, "--out", str(out_dir))
    assert code == 0
    payload = one_json_object(out)
    assert payload["config"]["trace"] == str(trace)
    assert payload["results"]["evalstop(srtf-est)"]["recall"] > 0.8
    written = json.loads((out_dir / "results.json").read_text())
    assert written["config"]["curves"] == str(curve_file)
    report = (out_dir / "report.md").read_text()
    assert f"curves={curve_file}" in report
    assert "curves_source=tests: Gao-shaped runs" in report


def test_the_hacking_sweep_runs_on_measured_curves(monkeypatch, capsys, curve_file) -> None:
    argv = ["simulate", "sweep", "hacking", "--values", "0.2,0.8", "--curves", str(curve_file)]
    code, out, _ = cli(monkeypatch, capsys, *argv, *RUN, "--rules", "evalstop")
    assert code == 0
    rows = one_json_object(out)["rows"]
    hacking = {r["value"]: r["hacking_jobs"] for r in rows if r["rule"] == "none"}
    assert hacking[0.8] > 2 * hacking[0.2]
