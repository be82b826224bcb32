"""JSONL files and stdout regexes: complete lines only, bad lines and values warned, files that
disappear or are replaced, steps from a group or counted."""

from __future__ import annotations

import json
import os

JSONL = {"source": "jsonl", "path": "metrics.jsonl", "eval_tag": "eval_acc", "total_steps": 50}


def append(path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_a_partial_last_line_waits_until_it_is_complete(tmp_path, watch):
    watcher, seen = watch(**JSONL, proxy_tag="reward")
    path = tmp_path / "metrics.jsonl"
    append(path, json.dumps({"step": 5, "reward": 0.1}) + "\n")
    append(path, '{"step": 10, "eval_acc": 0.')  # the writer is mid-line
    watcher.poll()
    assert seen.evals == [] and seen.warnings == []
    append(path, '42, "reward": 0.3}\n{"step": 20, "eval_acc": 0.5}\n')
    watcher.poll()
    assert seen.steps == [10, 20] and seen.scores == [0.42, 0.5]
    assert [e["proxy"] for e in seen.evals] == [0.3, 0.3] and seen.evals[0]["progress"] == 0.2


def test_bad_lines_steps_and_values_are_warned_and_skipped(tmp_path, watch):
    watcher, seen = watch(**JSONL)
    lines = [
        "not json at all",
        json.dumps({"step": "ten", "eval_acc": 0.1}),
        json.dumps({"eval_acc": 0.1}),
        json.dumps({"step": 1, "eval_acc": "high"}),
        '{"step": 2, "eval_acc": NaN}',  # Python's json writes NaN for float("nan")
        json.dumps({"step": 3, "eval_acc": None}),
        json.dumps({"step": 4, "eval_acc": 0.4}),
        json.dumps({"step": 5.0, "loss": 1.0}),  # no watched tag: no step needed
    ]
    append(tmp_path / "metrics.jsonl", "\n".join(lines) + "\n")
    watcher.poll()
    assert seen.steps == [4]
    expected = ["bad_line", "bad_step", "bad_step", "non_numeric", "not_finite", "non_numeric"]
    assert seen.codes() == expected
    assert "step is 'ten', not a step" in seen.warnings[1].message
    assert "eval_acc at step 1 is 'high', not a number" in seen.warnings[3].message


def test_a_step_going_back_in_the_same_file_is_a_restart(tmp_path, watch):
    watcher, seen = watch(**JSONL)
    path = tmp_path / "metrics.jsonl"
    for step, acc in [(10, 0.1), (20, 0.2), (30, 0.3), (20, 0.9), (30, 0.9), (40, 0.4)]:
        append(path, json.dumps({"step": step, "eval_acc": acc}) + "\n")
    watcher.poll()
    assert seen.steps == [10, 20, 30, 40] and seen.scores == [0.1, 0.2, 0.3, 0.4]
    assert seen.codes() == ["step_backwards"]


def test_a_file_that_disappears_and_comes_back(tmp_path, watch):
    watcher, seen = watch(**JSONL)
    path = tmp_path / "metrics.jsonl"
    append(path, json.dumps({"step": 1, "eval_acc": 0.1}) + "\n")
    watcher.poll()
    os.remove(path)
    watcher.poll()
    watcher.poll()
    assert seen.codes() == ["file_gone"] and "metrics.jsonl disappeared" in seen.warnings[0].message
    append(path, json.dumps({"step": 2, "eval_acc": 0.2}) + "\n")
    watcher.poll()
    assert seen.steps == [1, 2] and seen.codes() == ["file_gone", "file_replaced"]


def test_a_glob_picks_up_new_files(tmp_path, watch):
    watcher, seen = watch(**(JSONL | {"path": "logs/*.jsonl"}))
    (tmp_path / "logs").mkdir()
    append(tmp_path / "logs/a.jsonl", json.dumps({"step": 1, "eval_acc": 0.1}) + "\n")
    watcher.poll()
    append(tmp_path / "logs/b.jsonl", json.dumps({"step": 2, "eval_acc": 0.2}) + "\n")
    watcher.poll()
    assert seen.steps == [1, 2]


def test_a_symlink_out_of_the_job_directory_is_not_read(tmp_path, watch):
    job, outside = tmp_path / "job", tmp_path / "other-job"
    job.mkdir()
    outside.mkdir()
    append(outside / "metrics.jsonl", json.dumps({"step": 1, "eval_acc": 0.9}) + "\n")
    (job / "metrics.jsonl").symlink_to(outside / "metrics.jsonl")
    watcher, seen = watch(job_dir=job, **JSONL)
    watcher.poll()
    assert seen.evals == []


STDOUT = {"source": "stdout", "path": "stdout.log", "eval_tag": "acc", "total_steps": 100}


def test_stdout_named_groups(tmp_path, watch):
    regex = r"step (?P<step>\d+) .*val_acc=(?P<score>\S+) reward=(?P<proxy>\S+)"
    watcher, seen = watch(**STDOUT, regex=regex)
    log = tmp_path / "stdout.log"
    append(log, "loading model\nstep 10 | val_acc=0.31 reward=1.5\nstep 11 | loss 2.0\n")
    append(log, "step 20 | val_acc=0.45 reward=2.5\nstep 30 | val_acc=nan reward=3.0\nstep 4")
    watcher.poll()
    assert seen.steps == [10, 20] and [e["proxy"] for e in seen.evals] == [1.5, 2.5]
    assert seen.codes() == ["not_finite"]
    append(log, "0 | val_acc=oops reward=1\n")
    watcher.poll()
    assert seen.codes() == ["not_finite", "non_numeric"]


def test_stdout_one_group_counts_steps(tmp_path, watch):
    watcher, seen = watch(**STDOUT, regex=r"eval accuracy: ([\d.]+)", step_per_match=50)
    append(tmp_path / "stdout.log", "eval accuracy: 0.2\nnoise\neval accuracy: 0.3\n")
    watcher.poll()
    assert seen.steps == [50, 100] and seen.scores == [0.2, 0.3]
    assert seen.evals[1]["progress"] == 1.0


def test_total_steps_from_a_log_line_and_from_a_tag(tmp_path, watch):
    fields = STDOUT | {
        "total_steps": {"file": "stdout.log", "regex": r"Total training steps: (\d+)"}
    }
    watcher, seen = watch(**fields, regex=r"step (?P<step>\d+) acc (?P<score>\S+)")
    append(tmp_path / "stdout.log", "Total training steps: 40\nstep 10 acc 0.5\n")
    watcher.poll()
    assert seen.evals[0]["progress"] == 0.25
    fields = JSONL | {"total_steps": {"tag": "max_steps"}}
    watcher, seen = watch(**fields)
    append(tmp_path / "metrics.jsonl", json.dumps({"step": 0, "max_steps": 80}) + "\n")
    append(tmp_path / "metrics.jsonl", json.dumps({"step": 20, "eval_acc": 0.5}) + "\n")
    watcher.poll()
    assert seen.evals[0]["progress"] == 0.25


def test_unknown_total_steps_reports_progress_zero_and_warns_once(tmp_path, watch):
    watcher, seen = watch(**(JSONL | {"total_steps": None}))
    for step in (1, 2):
        append(tmp_path / "metrics.jsonl", json.dumps({"step": step, "eval_acc": 0.5}) + "\n")
    watcher.poll()
    assert [e["progress"] for e in seen.evals] == [0.0, 0.0] and seen.codes() == ["no_total_steps"]


def test_a_catastrophic_pattern_matches_a_hostile_line_in_linear_time(tmp_path, watch):
    """`(?:a+)+$` against a long line of `a`s ending in `b`: exponential for a backtracking
    engine (Python's re takes 2 s on 24 of them), one pass for RE2. A poll that hung would
    never return; this one reads the next line, whose run of a's is not a number."""
    append(tmp_path / "out.log", "a" * 100_000 + "b\n" + "a" * 30 + "\n")
    hostile = r"(?P<score>(?:a+)+)$"
    watcher, seen = watch(source="stdout", path="out.log", eval_tag="acc", regex=hostile)
    watcher.poll()
    assert seen.warnings and seen.evals == []  # the captured run of a's is not a number
