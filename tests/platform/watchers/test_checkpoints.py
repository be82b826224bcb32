"""Checkpoints by a {step} glob, and the one a best eval delivers: saved at its step, or else the
last saved before it; the decision says which."""

from __future__ import annotations

import json
import shutil

SPEC = {"source": "jsonl", "path": "m.jsonl", "eval_tag": "acc", "total_steps": 100}


def evals(tmp_path, *pairs) -> None:
    with open(tmp_path / "m.jsonl", "a") as f:
        for step, acc in pairs:
            f.write(json.dumps({"step": step, "acc": acc}) + "\n")


def save(tmp_path, name: str, ready: str | None = None) -> None:
    (tmp_path / name).mkdir(parents=True)
    if ready:
        (tmp_path / name / ready).write_text("{}")


def test_at_the_best_eval_step(tmp_path, watch):
    watcher, seen = watch(**SPEC, checkpoints="ckpt/global_step_{step}")
    evals(tmp_path, (10, 0.3), (20, 0.6), (30, 0.4))
    for step in (10, 20, 30):
        save(tmp_path, f"ckpt/global_step_{step}")
    save(tmp_path, "ckpt/tmp_global_step_40")  # not matched: the glob is anchored
    watcher.poll()
    assert seen.checkpoints == [
        (10, "ckpt/global_step_10", {"eval": 0.3}),
        (20, "ckpt/global_step_20", {"eval": 0.6}),
        (30, "ckpt/global_step_30", {"eval": 0.4}),
    ]
    delivery = watcher.delivered()
    assert (delivery.step, delivery.path, delivery.rule) == (
        20,
        "ckpt/global_step_20",
        "at_best_eval",
    )


def test_the_last_before_the_best_eval_when_none_at_it(tmp_path, watch):
    watcher, _ = watch(**SPEC, checkpoints="checkpoint-{step}")
    evals(tmp_path, (4, 0.3), (6, 0.6), (8, 0.4))
    for step in (5, 10):
        save(tmp_path, f"checkpoint-{step}")
    watcher.poll()
    delivery = watcher.delivered()
    assert (delivery.best_step, delivery.step, delivery.rule) == (6, 5, "last_before_best_eval")
    assert "checkpoint-5 (step 5) is the last saved before it" in delivery.reason


def test_a_deleted_best_checkpoint_falls_back_and_says_so(tmp_path, watch):
    watcher, seen = watch(**SPEC, checkpoints="checkpoint-{step}")
    evals(tmp_path, (5, 0.3), (10, 0.6), (15, 0.4))
    for step in (5, 10, 15):
        save(tmp_path, f"checkpoint-{step}")
    watcher.poll()
    shutil.rmtree(tmp_path / "checkpoint-10")  # save_total_limit rotated it away
    watcher.poll()
    assert seen.codes() == ["checkpoint_gone"]
    delivery = watcher.delivered()
    assert (delivery.step, delivery.rule) == (5, "last_before_best_eval")
    assert "the one saved at that step was deleted" in delivery.reason


def test_none_before_the_best_eval(tmp_path, watch):
    watcher, _ = watch(**SPEC, checkpoints="checkpoint-{step}")
    evals(tmp_path, (4, 0.9), (8, 0.4))
    save(tmp_path, "checkpoint-5")
    watcher.poll()
    delivery = watcher.delivered()
    assert delivery.step is None and delivery.rule == "no_checkpoint_at_or_before_best_eval"


def test_a_checkpoint_counts_once_its_ready_file_is_written(tmp_path, watch):
    watcher, seen = watch(**SPEC, checkpoints="checkpoint-{step}", checkpoint_ready="done.json")
    save(tmp_path, "checkpoint-5")
    watcher.poll()
    assert seen.checkpoints == []
    (tmp_path / "checkpoint-5" / "done.json").write_text("{}")
    watcher.poll()
    watcher.poll()
    assert seen.checkpoints == [(5, "checkpoint-5", {})]
