"""verl's per-step timers read beside its evals and reported as the job's steps (step_timers.py):
each step once, when a later step has been read or the watch ends; verl's older `timing/` names
too; its evals reported as before."""

from __future__ import annotations

import json

from rlguard.platform.watchers import Watcher, WatchSpec

EVAL = "val-core/openai/gsm8k/reward/mean@1"


def _line(step: int, **metrics: float) -> str:
    return json.dumps({"step": step, "data": metrics}) + "\n"


def test_verl_step_timers_are_reported_once_each(tmp_path):
    steps, evals = [], []
    spec = WatchSpec(preset="verl", source="jsonl", path="run.jsonl", total_steps=4)
    watcher = Watcher(
        spec, tmp_path, lambda **e: evals.append(e), on_step=lambda s, **t: steps.append((s, t))
    )
    log = tmp_path / "run.jsonl"
    log.write_text(_line(1, **{"timing_s/gen": 40.0, "timing_s/update_actor": 7.0, EVAL: 0.3}))
    watcher.poll()
    assert steps == []  # step 1 may still be being written
    with log.open("a") as f:
        f.write(_line(2, **{"timing/gen": 30.0, "response_length/mean": 320.0, "actor/pg_loss": 1}))
    watcher.poll()
    assert steps == [(1, {"gen_s": 40.0, "update_actor_s": 7.0})]
    watcher.poll()  # nothing new: nothing again
    watcher.timers.flush(final=True)
    assert steps[1:] == [(2, {"gen_s": 30.0, "response_length_mean": 320.0})]
    assert [e["step"] for e in evals] == [1] and evals[0]["score"] == 0.3
