"""The watch thread of a run's actor, in process with a recording reporter: it stops the job once
on the first stop answer and watches on until the process ends, then delivers; warnings are
capped per code; a failing report or reader is a warning, never the end of the watch; verl's step
timers go as the job's steps."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from rlguard.platform.client import PlatformError
from rlguard.platform.jobwatch import WARNINGS_PER_CODE, JobWatch

SPEC = {
    "source": "jsonl",
    "path": "metrics.jsonl",
    "eval_tag": "acc",
    "total_steps": 100,
    "checkpoints": "ckpt-{step}",
    "poll_s": 0.05,
}


class Reporter:
    job_id = "job-1"

    def __init__(self, stop_at: int | None = None, fail_evals: bool = False) -> None:
        self.stop_at, self.fail_evals = stop_at, fail_evals
        self.evals: list[int] = []
        self.checkpoints: list[int] = []
        self.warnings: list[tuple[str, str]] = []
        self.deliveries: list[dict] = []
        self.steps: list[tuple[int, dict]] = []

    def eval(self, step: int, **_) -> dict:
        if self.fail_evals:
            raise TimeoutError("the platform did not take it")
        self.evals.append(step)
        stop = self.stop_at is not None and step >= self.stop_at
        return {"action": "stop" if stop else "continue"}

    def checkpoint(self, step: int, path: str, metrics: dict) -> None:
        self.checkpoints.append(step)

    def warning(self, code: str, message: str, data: dict) -> None:
        self.warnings.append((code, message))

    def delivery(self, delivery: dict) -> None:
        self.deliveries.append(delivery)

    def step(self, step: int, **timers: float) -> None:
        if timers.get("gen_s") == 0:  # as the platform answers a timer of 0
            raise PlatformError(422, {"error": {"message": "gen_s: Input should be > 0"}})
        self.steps.append((step, timers))


def log(job: Path, *records: dict | str) -> None:
    with (job / "metrics.jsonl").open("a") as f:
        for record in records:
            f.write((record if isinstance(record, str) else json.dumps(record)) + "\n")


def watch(job: Path, reporter: Reporter) -> tuple[JobWatch, list[int]]:
    stops: list[int] = []
    job_watch = JobWatch(SPEC, str(job), reporter, lambda: stops.append(1))  # type: ignore[arg-type]
    return job_watch, stops


def test_a_stop_answer_stops_the_job_once_and_the_watch_delivers_at_its_end(tmp_path):
    reporter = Reporter(stop_at=20)
    (tmp_path / "ckpt-10").mkdir()
    log(tmp_path, {"step": 10, "acc": 0.9}, {"step": 20, "acc": 0.5}, {"step": 30, "acc": 0.4})
    job_watch, stops = watch(tmp_path, reporter)
    job_watch.start()
    threading.Event().wait(0.3)
    (tmp_path / "ckpt-30").mkdir()  # saved on SIGTERM, before the process ended
    threading.Event().wait(0.2)
    job_watch.finish()
    assert stops == [1]
    assert reporter.evals == [10, 20, 30] and reporter.checkpoints == [10, 30]
    assert reporter.deliveries == [
        {
            "best_step": 10,
            "best_score": 0.9,
            "step": 10,
            "path": "ckpt-10",
            "rule": "at_best_eval",
            "reason": "ckpt-10 was saved at the best eval's step 10",
        }
    ]


def test_warnings_are_capped_per_code(tmp_path):
    reporter = Reporter()
    log(tmp_path, *({"step": s, "acc": "NaN?"} for s in range(1, 20)))
    job_watch, _ = watch(tmp_path, reporter)
    job_watch.start()
    job_watch.finish()
    codes = [code for code, _ in reporter.warnings if code == "non_numeric"]
    assert len(codes) == WARNINGS_PER_CODE + 1
    assert "more 'non_numeric' warnings follow" in reporter.warnings[WARNINGS_PER_CODE][1]


def test_a_failing_report_is_a_warning_and_the_watch_goes_on(tmp_path):
    reporter = Reporter(fail_evals=True)
    log(tmp_path, {"step": 10, "acc": 0.9})
    job_watch, _ = watch(tmp_path, reporter)
    job_watch.start()
    threading.Event().wait(0.2)
    reporter.fail_evals = False
    log(tmp_path, {"step": 20, "acc": 0.8})
    threading.Event().wait(0.2)
    job_watch.finish()
    assert reporter.warnings[0][0] == "watch_error" and "TimeoutError" in reporter.warnings[0][1]
    assert reporter.evals == [20] and len(reporter.deliveries) == 1


def test_verl_step_timers_go_as_the_jobs_steps_the_last_when_it_ends(tmp_path):
    reporter = Reporter()
    log(tmp_path, {"step": 1, "timing_s/gen": 0.0}, {"step": 2, "timing_s/gen": 30.0})
    log(tmp_path, {"step": 3, "timing_s/gen": 28.0, "timing_s/step": 35.0, "acc": 0.5})
    job_watch, _ = watch(tmp_path, reporter)
    job_watch.start()
    job_watch.finish()
    assert reporter.steps == [(2, {"gen_s": 30.0}), (3, {"gen_s": 28.0, "step_s": 35.0})]
    assert [code for code, _ in reporter.warnings] == ["step_refused"]  # step 1's 0, refused
    assert reporter.evals == [3]
