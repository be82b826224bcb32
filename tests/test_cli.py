"""The `rlguard` command: JSON output, files written by --out, sweeps, traces, bench, bad input.

Most cases call `rlguard.cli.main` in-process (argv monkeypatched; it always ends in SystemExit);
two go through the installed console script to check the real process boundary.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cli_runner import cli
from rlguard.cluster.registry import RULES
from rlguard.cluster.traces import PACKAGED_TIRESIAS_TRACE

CONSOLE_SCRIPT = Path(sys.executable).parent / "rlguard"
SMALL = ["--seeds", "2", "--jobs", "40", "--workers", "1"]
DETECTION_KEYS = ("precision", "recall", "fpr")
RESULT_KEYS = (*DETECTION_KEYS, "jct_mean_h", "jct_p95_h", "waste_gpu_h", "quality_regret")
GAIN_KEYS = ("jct_gain", "waste_cut", "p_jct", "p_waste")
NAMED_RULES = ("none", "evalstop", "fixed-progress", "loss-plateau", "patience", "gao-trend")


def one_json_object(out: str) -> dict:
    lines = out.splitlines()
    assert len(lines) == 1, out[:500]
    payload = json.loads(lines[0])
    assert isinstance(payload, dict)
    return payload


def check_results(results: dict) -> None:
    assert set(results) == {f"{rule}(srtf-est)" for rule in RULES}
    for rule in NAMED_RULES:
        entry = results[f"{rule}(srtf-est)"]
        for k in RESULT_KEYS:
            assert k in entry, (rule, k)
        for k in GAIN_KEYS:
            assert (k in entry) == (rule != "none"), (rule, k)
        assert entry["seeds"] == 2
        assert entry["jobs"] == 40


# --- success paths -------------------------------------------------------------------------------


def test_simulate_json_through_the_console_script() -> None:
    proc = subprocess.run(
        [str(CONSOLE_SCRIPT), "simulate", *SMALL, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    payload = one_json_object(proc.stdout)
    assert set(payload) == {"config", "results"}
    assert payload["config"]["n_jobs"] == 40
    assert payload["config"]["seeds"] == 2
    assert payload["config"]["bases"] == ["srtf-est"]
    assert payload["config"]["rules"] == list(RULES)
    check_results(payload["results"])
    assert "Traceback" not in proc.stderr


def test_simulate_json_in_process_is_deterministic(monkeypatch, capsys) -> None:
    code, out, _ = cli(monkeypatch, capsys, "simulate", *SMALL, "--json")
    assert code == 0
    first = one_json_object(out)
    check_results(first["results"])
    code, out, _ = cli(monkeypatch, capsys, "simulate", *SMALL, "--json")
    second = one_json_object(out)
    assert second["results"] == first["results"]


def test_simulate_out_writes_results_report_and_plots(monkeypatch, capsys, tmp_path) -> None:
    out_dir = tmp_path / "out"
    code, out, _ = cli(monkeypatch, capsys, "simulate", *SMALL, "--json", "--out", str(out_dir))
    assert code == 0
    payload = one_json_object(out)
    names = {p.name for p in out_dir.iterdir()}
    assert {"results.json", "report.md", "jct_cdf.png", "eval_curves_evalstop.png"} <= names
    assert not [n for n in names if n.startswith(".")]  # no temporary files left behind
    written = json.loads((out_dir / "results.json").read_text())
    assert written["results"] == payload["results"]
    assert set(written["config"]) >= {"n_jobs", "gpus", "k", "seeds", "rules"}
    report = (out_dir / "report.md").read_text()
    assert report.startswith("# rlguard simulate: report")
    assert "evalstop(srtf-est)" in report
    assert "Beside the paper" in report
    for png in ("jct_cdf.png", "eval_curves_evalstop.png"):
        assert (out_dir / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_prints_a_table_without_json(monkeypatch, capsys) -> None:
    code, out, _ = cli(monkeypatch, capsys, "simulate", *SMALL, "--rules", "evalstop")
    assert code == 0
    assert "evalstop(srtf-est)" in out
    assert "none(srtf-est)" in out


def test_sweep_k_prints_rows(monkeypatch, capsys) -> None:
    code, out, _ = cli(
        monkeypatch, capsys, "simulate", "sweep", "k", "--values", "2,3", *SMALL, "--json"
    )
    assert code == 0
    payload = one_json_object(out)
    assert payload["sweep"] == "k"
    rows = payload["rows"]
    assert len(rows) == 2 * len(RULES)
    for r in rows:
        assert {"sweep", "value", "key", "rule", "base"} <= set(r)
        assert r["sweep"] == "k" and r["base"] == "srtf-est"
        assert r["key"] == f"{r['rule']}({r['base']})"
    assert {r["value"] for r in rows} == {2, 3}


def test_packaged_trace_runs_end_to_end(monkeypatch, capsys, tmp_path) -> None:
    trace = tmp_path / "tiresias.csv"
    trace.write_bytes(PACKAGED_TIRESIAS_TRACE.read_bytes())
    code, out, _ = cli(
        monkeypatch,
        capsys,
        "simulate",
        "--trace",
        str(trace),
        "--seeds",
        "2",
        "--workers",
        "1",
        "--rules",
        "evalstop",
        "--json",
    )
    assert code == 0
    payload = one_json_object(out)
    assert payload["config"]["trace"] == str(trace)
    es = payload["results"]["evalstop(srtf-est)"]
    assert es["jobs"] == 60
    assert es["seeds"] == 2
    assert "jct_gain" in es


def test_policy_args_and_restore_reach_the_runs(monkeypatch, capsys, tmp_path) -> None:
    knobs = tmp_path / "tiresias.yaml"
    knobs.write_text("tiresias:\n  thresholds: [3250, 7200]\n  tick_s: null\n")
    trace = ["--trace", str(PACKAGED_TIRESIAS_TRACE), "--gpus", "8", "--rules", "evalstop"]
    runs = {}
    for args in (["--policy-args", f"@{knobs}", "--restore-s", "0"], []):
        code, out, _ = cli(
            monkeypatch,
            capsys,
            *["simulate", *trace, "--base", "tiresias,fifo-strict", *args],
            *["--seeds", "1", "--workers", "1", "--json"],
        )
        assert code == 0
        runs[bool(args)] = one_json_object(out)
    config = runs[True]["config"]
    assert config["policy_args"] == {
        "tiresias": {"thresholds": [3250, 7200], "tick_s": None},
        "fifo-strict": {},
    }
    assert config["restore_s"] == 0.0 and runs[False]["config"]["restore_s"] == 60.0
    jct_s = {k: v["jct_mean_h"] * 3600 for k, v in runs[True]["results"].items()}
    # The Tiresias simulator's mean JCTs on this trace at 8 GPUs (crosscheck_tiresias.py):
    # fifo (strict) 1556.48 s, dlas-gpu 715.27 s (no job is demoted: it runs like fjf).
    assert jct_s["none(fifo-strict)"] == pytest.approx(1556.4833, abs=1e-3)
    assert jct_s["none(tiresias)"] == pytest.approx(715.2667, abs=1e-3)


def test_bench_simulate_prints_json(monkeypatch, capsys) -> None:
    code, out, _ = cli(monkeypatch, capsys, "bench", "simulate", "--jobs", "200", "--gpus", "64")
    assert code == 0
    payload = one_json_object(out)
    assert payload["jobs"] == 200 and payload["gpus"] == 64
    for k in ("wall_s", "jobs_per_s", "events_per_s"):
        assert isinstance(payload[k], int | float) and payload[k] > 0
    assert payload["events"] > 200


# --- bad input -----------------------------------------------------------------------------------

HEADER = "job_id,num_gpu,submit_time,duration"


def _trace(name: str, text: str) -> Callable[[Path], tuple[list[str], list[str]]]:
    def build(tmp: Path) -> tuple[list[str], list[str]]:
        path = tmp / name
        path.write_text(text)
        return ["--trace", str(path)], [str(path)]

    return build


def _args(*args: str, expect: tuple[str, ...] = ()) -> Callable[[Path], tuple]:
    return lambda tmp: (list(args), list(expect))


def _too_big(tmp: Path) -> tuple[list[str], list[str]]:
    path = tmp / "big.csv"
    path.write_text(f"{HEADER}\n1,16,0,10\n")
    return ["--trace", str(path), "--gpus", "8"], [str(path), "line 2", "num_gpu", "16"]


def _missing(tmp: Path) -> tuple[list[str], list[str]]:
    path = tmp / "nowhere.csv"
    return ["--trace", str(path)], [str(path)]


def _with(build, *more: str):  # type: ignore[no-untyped-def]
    def wrapped(tmp: Path) -> tuple[list[str], list[str]]:
        args, expect = build(tmp)
        return args, [*expect, *more]

    return wrapped


BAD_INPUT = [
    pytest.param(_args("--noise", "-0.1", expect=("--noise",)), id="noise"),
    pytest.param(_args("--k", "0", expect=("--k",)), id="k-zero"),
    pytest.param(_args("--base", "nope", expect=("--base", "nope")), id="base"),
    pytest.param(_args("--gpus", "0", expect=("--gpus",)), id="gpus"),
    pytest.param(_args("--gpus", "12", expect=("multiple of 8",)), id="gpus-not-whole-nodes"),
    pytest.param(_args("--hacking-fraction", "1.5", expect=("--hacking-fraction",)), id="hacking"),
    pytest.param(
        _with(_trace("nodur.csv", "job_id,num_gpu,submit_time\n1,1,0\n"), "line 1", "duration"),
        id="trace-missing-duration",
    ),
    pytest.param(
        _with(_trace("neg.csv", f"{HEADER}\n1,1,0,10\n2,1,5,-3\n"), "line 3", "'duration'"),
        id="trace-negative-duration",
    ),
    pytest.param(
        _with(_trace("gpu.csv", f"{HEADER}\n1,x,0,10\n"), "line 2", "'num_gpu'", "'x'"),
        id="trace-non-numeric-gpus",
    ),
    pytest.param(_too_big, id="trace-job-too-big"),
    pytest.param(_missing, id="trace-no-such-file"),
    pytest.param(_args("sweep", "bogus", expect=("bogus",)), id="sweep-bogus"),
    pytest.param(_args("--k", "abc", expect=("--k", "integer")), id="k-not-an-int"),
    pytest.param(
        _args(
            "--base",
            "tiresias",
            "--policy-args",
            '{"thresholds": [3250, 100]}',
            expect=("--policy-args", "tiresias", "'thresholds'", "[3250, 100]"),
        ),
        id="policy-args-thresholds",
    ),
    pytest.param(
        _args(
            "--base",
            "tiresias",
            "--policy-args",
            "promote_knob=-1",
            expect=("--policy-args", "'promote_knob'", "(got -1)"),
        ),
        id="policy-args-knob",
    ),
    pytest.param(
        _args("--policy-args", "tick_s", expect=("--policy-args", "key=value", "'tick_s'")),
        id="policy-args-not-a-pair",
    ),
    pytest.param(_args("--policy-args", "{oops", expect=("--policy-args", "JSON")), id="not-json"),
    pytest.param(
        _args(
            "--base",
            "fifo",
            "--policy-args",
            '{"tiresias": {"tick_s": null}}',
            expect=("--policy-args", "'tiresias'", "not among the bases"),
        ),
        id="policy-args-other-base",
    ),
    pytest.param(_args("--restore-s", "-1", expect=("--restore-s", "-1")), id="restore-s"),
]


@pytest.mark.parametrize("build", BAD_INPUT)
def test_bad_input_is_one_error_line_and_exit_2(monkeypatch, capsys, tmp_path, build) -> None:
    args, expect = build(tmp_path)
    out_dir = tmp_path / "out"
    argv = ["simulate", *args, "--seeds", "1", "--jobs", "20", "--workers", "1"]
    code, out, err = cli(monkeypatch, capsys, *argv, "--json", "--out", str(out_dir))
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, repr(err)  # exactly one line, no blank line before it
    assert err.startswith("error:") and err.endswith("\n")
    for text in expect:
        assert text in err, (text, err)
    assert not out_dir.exists() or not any(out_dir.iterdir())


def test_bad_input_through_the_console_script(tmp_path) -> None:
    out_dir = tmp_path / "out"
    proc = subprocess.run(
        [str(CONSOLE_SCRIPT), "simulate", "--noise", "-0.1", "--json", "--out", str(out_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("error: option --noise:")
    assert not out_dir.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--bogus"],
        ["nope"],
        ["simulate", "--seeds", "0"],
        ["bench", "simulate", "--jobs", "0"],
    ],
    ids=["unknown-option", "unknown-command", "seeds-below-min", "bench-jobs-below-min"],
)
def test_click_usage_errors_are_one_line_and_exit_2(monkeypatch, capsys, argv) -> None:
    code, out, err = cli(monkeypatch, capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("error:") and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv", [["--base", "all"], ["--rule", "all"], ["--base", "fifo,srtf-est"]]
)
def test_bench_rejects_names_it_cannot_run(monkeypatch, capsys, argv) -> None:
    code, out, err = cli(monkeypatch, capsys, "bench", "simulate", "--jobs", "10", *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("error:") and len(err.splitlines()) == 1
