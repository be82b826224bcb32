"""TensorBoard event files: tailed as they grow, new files after a restart, both scalar forms,
bad values and vanished files warned about while the watch goes on."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from tensorboard.compat.proto import summary_pb2
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from torch.utils.tensorboard import SummaryWriter

SPEC = {"source": "tensorboard", "path": "tb", "eval_tag": "eval/score", "total_steps": 100}


def writer(tmp_path, suffix: str = "") -> SummaryWriter:
    return SummaryWriter(str(tmp_path / "tb"), filename_suffix=suffix)


def test_reads_only_what_was_appended(tmp_path, watch):
    watcher, seen = watch(**SPEC, proxy_tag="train/reward", kl_tag="train/kl")
    w = writer(tmp_path)
    for step in (10, 20):
        w.add_scalar("train/reward", step / 10, step)
        w.add_scalar("train/kl", step / 100, step - 1)
        w.add_scalar("eval/score", step / 100, step)
    w.flush()
    assert [r.step for r in watcher.poll()] == [10, 20]
    assert watcher.poll() == []  # nothing new
    w.add_scalar("eval/score", 0.5, 30)
    w.flush()
    assert [r.step for r in watcher.poll()] == [30]
    assert seen.steps == [10, 20, 30] and seen.scores == [0.1, 0.2, 0.5]
    assert seen.evals[1] == pytest.approx(
        {"step": 20, "score": 0.2, "progress": 0.2, "loss": None, "proxy": 2.0, "kl": 0.2}
    )  # TensorBoard keeps float32
    assert seen.evals[2]["proxy"] == 2.0  # the last proxy logged before step 30
    assert watcher.events_read == 7 and seen.warnings == []


def test_restart_writes_a_new_file_with_steps_going_back(tmp_path, watch):
    watcher, seen = watch(**SPEC)
    first = writer(tmp_path)
    for step, score in [(10, 0.2), (20, 0.4), (30, 0.5)]:
        first.add_scalar("eval/score", score, step)
    first.close()
    watcher.poll()
    time.sleep(1.1)  # event file names carry the second they were created in
    second = writer(tmp_path, ".restart")  # resumed from the step-20 checkpoint
    for step, score in [(25, 0.9), (30, 0.9), (40, 0.6)]:
        second.add_scalar("eval/score", score, step)
    second.flush()
    watcher.poll()
    assert seen.steps == [10, 20, 30, 40] and seen.scores == [0.2, 0.4, 0.5, 0.6]
    [back] = [w for w in seen.warnings if w.code == "step_backwards"]
    assert back.data["from"] == 30 and back.data["to"] == 25
    assert "restarted attempt" in back.message and "past step 30" in back.message


def test_tensor_scalars_and_simple_values(tmp_path, watch):
    """TF2's tf.summary.scalar writes a scalars-plugin tensor; torch writes simple_value."""
    watcher, seen = watch(**SPEC)
    (tmp_path / "tb").mkdir()
    files = EventFileWriter(str(tmp_path / "tb"))
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )
    for step, value in [(1, np.float64(0.25)), (2, np.float32(0.5))]:
        tensor = tensor_util.make_tensor_proto(value)
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="eval/score", tensor=tensor, metadata=metadata)]
        )
        files.add_event(Event(wall_time=time.time(), step=step, summary=summary))
    value = summary_pb2.Summary.Value(tag="eval/score", simple_value=0.75)
    summary = summary_pb2.Summary(value=[value])
    files.add_event(Event(wall_time=time.time(), step=3, summary=summary))
    files.flush()
    watcher.poll()
    assert seen.steps == [1, 2, 3] and seen.scores == [0.25, 0.5, 0.75]


def test_nan_and_text_under_the_eval_tag_are_warned_and_skipped(tmp_path, watch):
    watcher, seen = watch(**SPEC)
    w = writer(tmp_path)
    w.add_scalar("eval/score", 0.1, 1)
    w.add_scalar("eval/score", float("nan"), 2)
    w.add_scalar("eval/score", float("inf"), 3)
    text = tensor_util.make_tensor_proto("diverged")  # a string tensor under the eval tag
    value = summary_pb2.Summary.Value(tag="eval/score", tensor=text)
    w._get_file_writer().add_summary(summary_pb2.Summary(value=[value]), 4)
    w.add_scalar("eval/score", 0.3, 5)
    w.flush()
    watcher.poll()
    assert seen.steps == [1, 5]
    assert seen.codes() == ["not_finite", "not_finite", "non_numeric"]
    assert "eval/score at step 2 is nan; skipped" in seen.warnings[0].message
    assert "not a number" in seen.warnings[2].message


def test_a_vanished_file_is_warned_once_and_the_watch_goes_on(tmp_path, watch):
    watcher, seen = watch(**SPEC)
    w = writer(tmp_path)
    w.add_scalar("eval/score", 0.1, 1)
    w.close()
    watcher.poll()
    [path] = (tmp_path / "tb").glob("events.out.tfevents.*")
    os.remove(path)
    watcher.poll()
    watcher.poll()
    assert seen.codes() == ["file_gone"] and path.name in seen.warnings[0].message
    time.sleep(1.1)
    w = writer(tmp_path, ".2")
    w.add_scalar("eval/score", 0.2, 2)
    w.flush()
    watcher.poll()
    assert seen.steps == [1, 2]


def test_a_tag_never_seen_is_warned_with_the_tags_that_were(tmp_path, watch):
    fields = SPEC | {"eval_tag": "eval/acuracy", "no_eval_warn_polls": 3}
    watcher, seen = watch(**fields)
    w = writer(tmp_path)
    w.add_scalar("eval/accuracy", 0.5, 1)
    w.add_scalar("train/loss", 2.0, 1)
    w.flush()
    for _ in range(5):
        watcher.poll()
    [warning] = seen.warnings
    assert warning.code == "no_eval_yet"
    assert warning.message.startswith("no eval for tag 'eval/acuracy' yet, after")
    assert "(3 polls)" in warning.message
    assert "did you mean eval/accuracy" in warning.message


def test_polls_before_any_metric_do_not_count_toward_the_warning(tmp_path, watch):
    """A job still starting up has written nothing: polls count once metrics flow, so the
    warning can name the tags the job does write."""
    watcher, seen = watch(**(SPEC | {"eval_tag": "eval/acuracy", "no_eval_warn_polls": 3}))
    for _ in range(5):
        watcher.poll()
    assert seen.warnings == []
    w = writer(tmp_path)
    w.add_scalar("eval/accuracy", 0.5, 1)
    w.flush()
    for _ in range(2):
        watcher.poll()
    assert seen.warnings == []
    watcher.poll()
    [warning] = seen.warnings
    assert "(8 polls)" in warning.message and "tags seen: eval/accuracy" in warning.message


def test_no_eval_yet_after_a_time_too(tmp_path, watch):
    now = [0.0]
    fields = SPEC | {"no_eval_warn_s": 60, "no_eval_warn_polls": 1000}
    watcher, seen = watch(clock=lambda: now[0], **fields)
    watcher.poll()
    assert seen.warnings == []
    now[0] = 61.0
    watcher.poll()
    assert seen.codes() == ["no_eval_yet"] and "matched no event file" in seen.warnings[0].message


def test_min_mode_reports_the_negated_value_and_the_best_is_lowest(tmp_path, watch):
    watcher, seen = watch(**(SPEC | {"eval_tag": "eval/loss", "mode": "min"}))
    w = writer(tmp_path)
    for step, loss in [(1, 2.0), (2, 1.5), (3, 1.7)]:
        w.add_scalar("eval/loss", loss, step)
    w.flush()
    watcher.poll()
    assert seen.scores == [-2.0, -1.5, -1.7] and watcher.best().step == 2
