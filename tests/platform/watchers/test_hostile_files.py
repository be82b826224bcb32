"""A hostile job's files: the watcher runs with more privilege than the job, so links it plants
towards files outside its directory are never read, even when planted between a check and an
open; FIFOs, endless lines and deeply nested JSON do not hang or crash it."""

from __future__ import annotations

import json
import os

from torch.utils.tensorboard import SummaryWriter

from rlguard.platform.watchers import files, tensorboard
from rlguard.platform.watchers.files import open_inside

JSONL = {"source": "jsonl", "path": "logs/metrics.jsonl", "eval_tag": "acc", "total_steps": 10}
SECRET = json.dumps({"step": 1, "acc": 0.99}) + "\n"


def jobs(tmp_path):
    job, other = tmp_path / "job", tmp_path / "other-job"
    (job / "logs").mkdir(parents=True)
    (other / "logs").mkdir(parents=True)
    (other / "logs" / "metrics.jsonl").write_text(SECRET)
    return job, other


def test_open_inside_refuses_links_fifos_and_linked_directories(tmp_path):
    job, other = jobs(tmp_path)
    (job / "logs" / "mine.jsonl").write_text(SECRET)
    assert open_inside(job, job / "logs" / "mine.jsonl").read() == SECRET.encode()
    (job / "link.jsonl").symlink_to(other / "logs" / "metrics.jsonl")
    assert open_inside(job, job / "link.jsonl") is None
    (job / "other").symlink_to(other / "logs")
    assert open_inside(job, job / "other" / "metrics.jsonl") is None
    os.mkfifo(job / "fifo.jsonl")
    assert open_inside(job, job / "fifo.jsonl") is None  # returns at once, not blocked


def test_a_link_planted_after_the_check_is_still_not_read(tmp_path, watch, monkeypatch):
    """The race: the job swaps its directory for a link between the watcher's path check and
    its open. Every path check is made to pass, as if the swap came right after it."""
    job, other = jobs(tmp_path)
    monkeypatch.setattr(files, "inside", lambda job_dir, path: True)
    (job / "logs").rmdir()
    (job / "logs").symlink_to(other / "logs")
    watcher, seen = watch(job_dir=job, **JSONL)
    watcher.poll()
    assert seen.evals == []


def test_a_watched_file_replaced_by_a_link_is_refused_and_warned(tmp_path, watch):
    job, other = jobs(tmp_path)
    mine = job / "logs" / "metrics.jsonl"
    mine.write_text(json.dumps({"step": 1, "acc": 0.5}) + "\n")
    watcher, seen = watch(job_dir=job, **JSONL)
    watcher.poll()
    mine.unlink()
    mine.symlink_to(other / "logs" / "metrics.jsonl")
    watcher.poll()
    watcher.poll()
    assert seen.scores == [0.5]
    assert seen.codes().count("file_refused") == 1


def test_a_tensorboard_file_behind_a_raced_link_is_not_read(tmp_path, watch, monkeypatch):
    job, other = tmp_path / "job", tmp_path / "other-job"
    job.mkdir()
    with SummaryWriter(str(other / "tb")) as writer:
        writer.add_scalar("eval/reward", 0.99, 1)
    monkeypatch.setattr(tensorboard, "inside", lambda job_dir, path: True)
    (job / "tb").symlink_to(other / "tb")
    watcher, seen = watch(job_dir=job, source="tensorboard", path="tb", eval_tag="eval/reward")
    watcher.poll()
    assert seen.evals == []


def test_nested_json_and_an_endless_line_are_warned_not_fatal(tmp_path, watch):
    job = tmp_path
    (job / "logs").mkdir()
    path = job / "logs" / "metrics.jsonl"
    path.write_text("[" * 100_000 + "\n" + json.dumps({"step": 2, "acc": 0.4}) + "\n")
    watcher, seen = watch(**JSONL)
    watcher.poll()
    with open(path, "a") as f:
        f.write("x" * (files.LineTail.MAX_LINE + 10))
    watcher.poll()
    assert seen.scores == [0.4]
    assert seen.codes() == ["bad_line", "bad_line"]
