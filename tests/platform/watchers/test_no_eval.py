"""A watch that reads no eval says so, naming where it looked and what it found: no file
matched (and a path one directory off that does), files whose tags are not the eval tag (and the
tags they hold), after the stated time though no file was read, and when the run has ended; each
code once (polls that read metrics count toward it too: test_tensorboard.py). The Trainer
presets read where a command job's $RLGUARD_OUTPUT_DIR points."""

from __future__ import annotations

import json

import pytest

from rlguard.platform import jobspec
from rlguard.platform.watchers import WatchSpec
from rlguard.platform.watchers.no_eval import DATA_BYTES, bounded

JSONL = {"source": "jsonl", "path": "metrics.jsonl", "eval_tag": "eval_acc", "total_steps": 50}
WAIT = {"no_eval_warn_s": 10, "no_eval_warn_polls": 1000}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def trainer_state(directory, *history: dict) -> None:
    directory.mkdir(parents=True)
    state = {"max_steps": 10, "log_history": list(history)}
    (directory / "trainer_state.json").write_text(json.dumps(state))


def test_no_file_matched_is_warned_after_the_stated_time_naming_where_it_looked(tmp_path, watch):
    clock = Clock()
    watcher, seen = watch(clock=clock, **JSONL, **WAIT)
    clock.now = 9.5
    watcher.poll()
    assert seen.warnings == []
    clock.now = 10.0
    watcher.poll()
    watcher.poll()
    [warning] = seen.warnings
    assert warning.code == "no_eval_yet"
    assert warning.message == (
        "no eval for tag 'eval_acc' yet, after 10 s (2 polls): "
        f"jsonl 'metrics.jsonl' under {tmp_path} matched no file"
    )
    assert warning.data["files"] == [] and warning.data["matches_instead"] is None
    assert warning.data["job_dir"] == str(tmp_path) and warning.data["path"] == "metrics.jsonl"


def test_files_with_other_tags_are_named_with_their_tags(tmp_path, watch):
    clock = Clock()
    watcher, seen = watch(clock=clock, **(JSONL | {"path": "*.jsonl"}), **WAIT)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(json.dumps({"step": 1, "eval_accuracy": 0.5}) + "\n")
    watcher.poll()
    clock.now = 11
    watcher.poll()
    [warning] = seen.warnings
    assert warning.message.endswith(
        f"jsonl '*.jsonl' under {tmp_path}: found a.jsonl, b.jsonl; tags seen: eval_accuracy, "
        "step; did you mean eval_accuracy?"
    )
    assert warning.data["files"] == ["a.jsonl", "b.jsonl"]
    assert warning.data["seen"] == ["eval_accuracy", "step"]


def test_a_file_with_no_tags_and_a_regex_that_never_matched_are_said(tmp_path, watch):
    clock = Clock()
    (tmp_path / "metrics.jsonl").write_text("\n")
    (tmp_path / "train.log").write_text("starting\n")
    stdout = {"source": "stdout", "path": "train.log", "eval_tag": "acc", "regex": r"acc=(\S+)"}
    watchers = [watch(clock=clock, **JSONL, **WAIT), watch(clock=clock, **stdout, **WAIT)]
    clock.now = 10
    messages = []
    for watcher, seen in watchers:
        watcher.poll()
        messages += [w.message for w in seen.warnings]
    assert messages[0].endswith(": found metrics.jsonl; no tags in them")
    assert messages[1].endswith(": found train.log; no line matched regex 'acc=(\\\\S+)'")


def test_the_runs_end_with_no_eval_is_warned_once_even_after_no_eval_yet(tmp_path, watch):
    clock = Clock()
    watcher, seen = watch(clock=clock, **JSONL, **WAIT)
    watcher.poll()
    assert seen.warnings == []  # a short job: its end comes before the stated time
    watcher.poll(final=True)
    watcher.poll(final=True)
    [warning] = seen.warnings
    assert warning.code == "no_eval"
    assert warning.message.startswith("no eval for tag 'eval_acc' by the run's end, after 0 s")
    clock.now = 20
    watcher.poll()
    assert seen.codes() == ["no_eval", "no_eval_yet"]


def test_a_run_with_an_eval_ends_without_a_warning(tmp_path, watch):
    watcher, seen = watch(**JSONL, **WAIT)
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "eval_acc": 0.5}) + "\n")
    delivery = watcher.run(should_stop=lambda: True)
    assert seen.steps == [1] and seen.warnings == [] and delivery.best_step == 1


@pytest.mark.parametrize(
    ("written_in", "path", "suggested"),
    [
        (".", "output/checkpoint-*/trainer_state.json", "checkpoint-*/trainer_state.json"),
        (
            "trainer_output",
            "checkpoint-*/trainer_state.json",
            "trainer_output/checkpoint-*/trainer_state.json",
        ),
    ],
)
def test_no_file_matched_suggests_a_path_one_directory_off(
    tmp_path, watch, written_in, path, suggested
):
    trainer_state(tmp_path / written_in / "checkpoint-2", {"step": 2, "eval_loss": 1.0})
    fields = {"preset": "transformers", "eval_tag": "eval_loss", "path": path}
    watcher, seen = watch(**fields)
    watcher.poll(final=True)
    [warning] = seen.warnings
    assert warning.message.endswith(
        f"matched no file; {suggested!r} does match (set path, and checkpoints, to it)"
    )
    assert warning.data["matches_instead"] == suggested


@pytest.mark.parametrize("preset", ["transformers", "trl"])
@pytest.mark.parametrize("source", ["trainer_state", "tensorboard"])
def test_the_trainer_presets_read_the_jobs_output_dir(preset, source):
    """A Trainer's output_dir=$RLGUARD_OUTPUT_DIR is `output/` in the job's directory."""
    spec = WatchSpec(preset=preset, source=source)
    paths = [spec.path, spec.checkpoints, spec.total_steps.file]
    assert all(p.startswith(f"{jobspec.OUTPUT}/") for p in paths), paths


def test_the_transformers_preset_reports_evals_from_the_output_dir(tmp_path, watch):
    output = tmp_path / jobspec.OUTPUT
    trainer_state(output / "checkpoint-2", {"step": 1, "loss": 3.0}, {"step": 2, "eval_loss": 2.5})
    watcher, seen = watch(preset="transformers")
    watcher.poll(final=True)
    assert seen.steps == [2] and seen.scores == [-2.5] and seen.evals[0]["progress"] == 0.2
    assert seen.checkpoints == [(2, "output/checkpoint-2", {"eval": -2.5})]
    assert seen.warnings == []


def test_a_warnings_data_fits_one_stored_record_whatever_the_job_names():
    tags = [f"tag-{i}-" + "é" * 500 for i in range(200)]
    data = bounded({"tag": "x", "seen": tags, "files": tags, "seen_count": 200})
    assert len(json.dumps(data).encode()) <= DATA_BYTES
    assert data["seen"] and data["seen_count"] == 200
