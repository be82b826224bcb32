"""The watch in a process of its own (watch_runner.py), reporting to a real HTTP server on
loopback that records what it is sent: evals and the delivery arrive; a stop answer comes back as
one call of `stop_job`; a poll past its deadline is killed with a warning that says so; a huge
file costs the watch process, within its cgroup, not the process that runs it (the actor)."""

from __future__ import annotations

import json
import os
import resource
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_jobwatch import SPEC  # the same watch as the in-process tests'

from rlguard.platform import joblimits
from rlguard.platform.watch_runner import WATCH_LIMITS, WatchRunner


class Platform(ThreadingHTTPServer):
    """Records each POST as (path, body); answers an eval of a step >= stop_at with stop."""

    def __init__(self, stop_at: int | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stop_at, self.posts = stop_at, []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def env(self) -> dict[str, str]:
        url = f"http://127.0.0.1:{self.server_address[1]}"
        return {"RLGUARD_URL": url, "RLGUARD_JOB_ID": "job-1", "RLGUARD_JOB_TOKEN": "rlj_x"}

    def sent(self, kind: str) -> list[dict]:
        return [body for path, body in self.posts if path.endswith("/" + kind)]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.posts.append((self.path, body))
        stop_at = self.server.stop_at
        stop = self.path.endswith("/evals") and stop_at is not None and body["step"] >= stop_at
        answer = json.dumps({"action": "stop" if stop else "continue"}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def platform():
    server = Platform()
    yield server
    server.shutdown()


def log(job: Path, *records: dict) -> None:
    with (job / "metrics.jsonl").open("a") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")


def runner(job: Path, platform: Platform, stops: list, **kwargs) -> WatchRunner:
    return WatchRunner(
        SPEC, str(job), str(job / "out.log"), platform.env, lambda: stops.append(1), **kwargs
    )


def test_the_process_reports_stops_once_and_delivers_at_the_end(tmp_path, platform):
    platform.stop_at = 20
    (tmp_path / "ckpt-10").mkdir()
    log(tmp_path, {"step": 10, "acc": 0.9}, {"step": 20, "acc": 0.5})
    stops: list = []
    watch = runner(tmp_path, platform, stops)
    watch.start()
    deadline = time.monotonic() + 60
    while not stops and time.monotonic() < deadline:
        time.sleep(0.05)
    log(tmp_path, {"step": 30, "acc": 0.4})  # written after the stop, before the job ended
    watch.finish()
    assert stops == [1]
    assert [e["step"] for e in platform.sent("evals")] == [10, 20, 30]
    assert [d["step"] for d in platform.sent("delivery")] == [10]
    assert watch.killed is None and platform.sent("warnings") == []


def test_a_poll_past_its_deadline_is_killed_and_said(tmp_path, platform):
    log(tmp_path, {"step": 10, "acc": 0.9})
    watch = runner(tmp_path, platform, [], poll_timeout_s=0.001)  # no poll is that quick
    watch.start()
    started = time.monotonic()
    watch.finish()
    assert time.monotonic() - started < 30  # the kill did not wait for the watch
    assert watch.killed is not None and "a poll ran past" in watch.killed
    (warning,) = platform.sent("warnings")
    assert warning["code"] == "watch_killed" and "the job runs on unwatched" in warning["message"]
    assert platform.sent("delivery") == []


def test_a_watch_that_dies_is_a_warning_naming_how(tmp_path, platform):
    watch = runner(tmp_path, platform, [])
    watch.start()
    os.kill(watch.process.pid, 9)  # as the OOM killer would
    watch.finish()
    (warning,) = platform.sent("warnings")
    assert "ended with signal 9" in warning["message"]
    assert f"{WATCH_LIMITS.memory_bytes >> 20} MiB" in warning["message"]


def _memory_limit(cgroup: Path) -> int | None:
    for name in ("memory.max", "memory.limit_in_bytes"):  # cgroup v2, v1
        if (cgroup / name).exists():
            return int((cgroup / name).read_text())
    return None


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need root")
def test_a_huge_trainer_state_costs_the_watch_process_in_its_cgroup(tmp_path, platform):
    """A 24 MiB trainer_state.json the job keeps touching: the process that runs the watch (the
    actor, here this test) does not grow; the watch process is held to WATCH_LIMITS' memory."""
    if joblimits.describe().startswith("rlimits only"):
        if os.environ.get("CI"):
            pytest.fail("CI must have writable cgroups")
        pytest.skip("no writable cgroup on this host")
    state = tmp_path / "checkpoint-1" / "trainer_state.json"
    state.parent.mkdir()
    history = [{"step": s, "loss": 0.5, "blob": "x" * 200} for s in range(100_000)]
    state.write_text(json.dumps({"log_history": history}))
    assert state.stat().st_size > 16 << 20
    spec = {"source": "trainer_state", "path": "checkpoint-*/trainer_state.json"}
    spec |= {"eval_tag": "eval_loss", "mode": "min", "poll_s": 0.05, "total_steps": 10}
    before = _peak_rss_mib()
    watch = WatchRunner(spec, str(tmp_path), str(tmp_path / "out.log"), platform.env, list)
    watch.start("rlguard-test-watch")
    for _ in range(20):
        os.utime(state)
        time.sleep(0.05)
    cgroup = joblimits.Cgroup.existing("rlguard-test-watch" + joblimits.WATCH_SUFFIX)
    in_cgroup, limits = cgroup.pids(), [_memory_limit(d) for d in cgroup.dirs]
    watch.finish()
    assert _peak_rss_mib() - before < 50
    assert in_cgroup == [watch.process.pid]
    assert WATCH_LIMITS.memory_bytes in limits
    warnings = platform.sent("warnings")
    # over the size a watch reads whole: warned once; and so no eval by the run's end
    assert [w["code"] for w in warnings] == ["file_too_large", "no_eval"]
    assert warnings[1]["message"].endswith(
        ": found checkpoint-1/trainer_state.json; no tags in them"
    )
