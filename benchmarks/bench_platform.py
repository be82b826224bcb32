"""The platform's speed: eval ingestion over HTTP, and one scheduling pass over 10,000 jobs.

Ingestion: a real `rlguard serve` on loopback (SQLite, and PostgreSQL when --postgres names a
database), `--jobs` running command jobs holding their job tokens, and wrk (Debian's package)
as the load: for each count in `--reporters`, that many connections post evals for `--seconds`;
events/s and the latency percentiles of the POSTs. Scheduling: `schedule()` of the live loop
over 10,000 queued jobs of `--tenants` tenants and 64 running ones, per policy, in-process (Ray's
actor creation is not part of a pass: its launches and preemptions are counted, not carried out).
Targets: >= 5,000 events/s with p99 < 50 ms on PostgreSQL; one pass < 100 ms. Writes JSON;
asserts nothing.

    python benchmarks/bench_platform.py --out benchmarks/results/platform.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from rlguard.io import write_json
from rlguard.ports import unused_port

RLGUARD = [sys.executable, "-m", "rlguard.cli"]


# What the load measures is the server's capacity, a few jobs each posting as fast as wrk can:
# over 500 evals/s per job here, past the per-job rate an operator sets against hostile jobs
# (`--job-reports-per-s`, 200 by default), so the benchmark lifts it out of the way.
UNTHROTTLED = ["--job-reports-per-s", "1000000", "--job-reports-burst", "1000000"]


def start_server(data: Path, port: int, db: str | None, gpus: int) -> subprocess.Popen:
    store = ["--data-dir", str(data), *(["--db", db] if db else [])]
    command = [*RLGUARD, "serve", "--port", str(port), "--gpus", str(gpus), *store, *UNTHROTTLED]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2).is_success:
                return server
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


WRK_SCRIPT = """
local jobs = {JOBS}
local next_thread = 0
function setup(thread)
  next_thread = next_thread + 1
  local job = jobs[(next_thread - 1) % #jobs + 1]
  thread:set("job", job[1])
  thread:set("token", job[2])
  thread:set("base", next_thread * 100000000)
end
function init(args)
  step = base
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end
function request()
  step = step + 1
  local body = string.format(
    '{"step": %d, "score": %.4f, "progress": 0.5, "loss": 1.0}', step, math.random())
  return wrk.format(nil, "/v1/jobs/" .. job .. "/evals", nil, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  local failed = e.status + e.connect + e.read + e.write + e.timeout
  io.write("JSON ", summary.requests, " ", failed, " ", latency:percentile(50), " ",
    latency:percentile(99), " ", latency.max, " ", summary.duration, "\\n")
end
"""


def _load(url: str, jobs: list[tuple[str, str]], connections: int, seconds: float) -> dict:
    """wrk (C, event-driven) as the load: a Python client saturates a core before the server
    does on a 2-core machine. One wrk thread per job, each posting that job's evals."""
    table = ", ".join(f'{{"{job}", "{token}"}}' for job, token in jobs)
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.replace("{JOBS}", "{" + table + "}"))
    command = ["wrk", f"-t{len(jobs)}", f"-c{connections}", f"-d{int(seconds)}s", "-s", script.name]
    out = subprocess.run([*command, url], check=True, capture_output=True, text=True).stdout
    fields = out.split("JSON ", 1)[1].split()
    requests, errors, p50_us, p99_us, max_us, duration_us = (float(f) for f in fields[:6])
    return {
        "events": int(requests),
        "errors": int(errors),
        "events_per_s": round(requests / (duration_us / 1e6), 1),
        "p50_ms": p50_us / 1000,
        "p99_ms": p99_us / 1000,
        "max_ms": max_us / 1000,
    }


def ingest(db: str | None, jobs: int, reporters: int, seconds: float) -> dict:
    from rlguard.platform.ray_head import stop_local_head

    data = Path(tempfile.mkdtemp(prefix="rlguard-bench-"))
    port = unused_port()
    server = start_server(data, port, db, gpus=jobs)
    try:
        make = [
            *RLGUARD,
            "tenants",
            "create",
            f"bench-{os.urandom(4).hex()}",
            "--quota-gpus",
            str(jobs),
            "--json",
        ]
        make += ["--data-dir", str(data), *(["--db", db] if db else [])]
        key = json.loads(subprocess.run(make, check=True, capture_output=True).stdout)["api_key"]
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        http.headers["Authorization"] = f"Bearer {key}"
        # A job that publishes its token and then just holds its GPU, watched by a shadow
        # EvalStop: every report is stored and decided (a stop verdict adds its decision
        # event) but never carried out, so the job keeps reporting.
        command = 'echo "$RLGUARD_JOB_TOKEN" > "$RLGUARD_OUTPUT_DIR/token"; sleep 3600'
        body = {"command": command, "stop_policy": {"rule": "evalstop", "k": 3, "shadow": True}}
        ids = [http.post("/v1/jobs", json=body).json()["id"] for _ in range(jobs)]
        tokens = []
        for job_id in ids:
            path = data / "jobs" / job_id / "output" / "token"
            for _ in range(600):
                if path.is_file() and path.read_text().strip():
                    break
                time.sleep(0.1)
            tokens.append((job_id, path.read_text().strip()))
        result = _load(f"http://127.0.0.1:{port}", tokens, reporters, seconds)
        return {
            "store": "postgresql" if db else "sqlite",
            "jobs": jobs,
            "reporters": reporters,
            "seconds": seconds,
            **result,
        }
    finally:
        server.terminate()
        server.wait(timeout=120)
        stop_local_head(data)


class _Decisions:
    """What one pass decides, counted: the pass's cost without Ray's actor creation or the
    store writes that carrying the decisions out costs."""

    def __init__(self) -> None:
        self.launch, self.preempt = [], []

    def launched(self, job_id: str) -> None:
        self.launch.append(job_id)

    def preempted(self, job_id: str) -> None:
        self.preempt.append(job_id)


class _Capacity:
    def __init__(self, gpus: int) -> None:
        self.gpus = gpus

    def capacity(self) -> int:
        return self.gpus


def schedule_pass(policy: str, queued: int, gpus: int, repeats: int, tenants: int) -> dict:
    from rlguard.cluster.registry import RuleParams
    from rlguard.platform import states
    from rlguard.platform.jobview import Defaults, JobViews
    from rlguard.platform.loop import schedule
    from rlguard.platform.rules import StopRules
    from rlguard.platform.server import build_policy
    from rlguard.platform.service import Active, Platform
    from rlguard.platform.store import Store
    from rlguard.platform.tenants import create_tenant

    data = Path(tempfile.mkdtemp(prefix="rlguard-bench-"))
    store = Store(f"sqlite:///{data / 'platform.db'}")
    owners = [create_tenant(store, f"t{i}", gpus)[0] for i in range(tenants)]
    rules = StopRules(build_policy(policy, {}), "evalstop", RuleParams())
    views = JobViews(False, data, [], "http://127.0.0.1:1", Defaults())
    platform = Platform(store, _Capacity(gpus), rules, data, "http://127.0.0.1:1", views)  # type: ignore[arg-type]
    decisions = _Decisions()
    platform.launch, platform.preempt = decisions.launched, decisions.preempted  # type: ignore[method-assign]
    rng = np.random.default_rng(0)
    now = time.time()
    for i in range(queued + gpus):
        job_id = f"job-{i}"
        running = i < gpus
        platform.active[job_id] = Active(
            job_id,
            owners[i % tenants],
            "command",
            "rlhf",
            1,
            1.0,
            rules.default,
            states.RUNNING if running else states.QUEUED,
        )
        platform.table.add(job_id, "rlhf", 1, now - 1000 + i * 0.01, float(rng.uniform(60, 7200)))
        if running:
            platform.table.start(job_id, now - 500)
    best = float("inf")
    for _ in range(repeats):
        decisions.__init__()
        start = time.perf_counter()
        schedule(platform, now, round_due=True)  # a full pass: order, admission, preemption
        best = min(best, time.perf_counter() - start)
    store.close()
    return {
        "policy": policy,
        "tenants": tenants,
        "queued": queued,
        "running": gpus,
        "pass_ms": round(best * 1000, 2),
        "would_launch": len(decisions.launch),
        "would_preempt": len(decisions.preempt),
    }


def _fresh_database(server: str) -> str:
    """A new empty database on the PostgreSQL server (a run must not inherit another's jobs)."""
    import psycopg

    name = f"rlguard_bench_{os.urandom(4).hex()}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--postgres", help="a PostgreSQL server URL (postgresql://user@host:port) to measure too"
    )
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--reporters", default="4,16", help="connection counts, comma-separated")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--tenants", type=int, default=100, help="owners of the queued jobs")
    args = parser.parse_args()
    connections = [int(c) for c in args.reporters.split(",")]
    runs = [(None, c) for c in connections]
    if args.postgres:
        runs += [(_fresh_database(args.postgres), c) for c in connections]
    result = {
        "machine": {"cpus": os.cpu_count(), "python": host.python_version()},
        "ingest": [ingest(db, args.jobs, c, args.seconds) for db, c in runs],
        "schedule": [
            schedule_pass(p, 10_000, 64, 5, args.tenants)
            for p in ("fifo", "srtf-est", "tiresias", "gittins", "slaq", "themis")
        ],
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
