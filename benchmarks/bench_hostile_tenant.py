"""The control plane under one hostile tenant: tenant A's API latency and its job's
eval-to-decision time while tenant B's job runs each attack of the resource battery
(tests/platform/hostile_job.py), against a quiet phase with A alone, side by side in one run.

A real sandboxed `rlguard serve` on loopback (SQLite). A's job reports an eval every 0.2 s and
prints how long each answer (its stop rule's decision) took; the benchmark polls A's
`GET /v1/jobs/{id}` every 50 ms. Each phase lasts `--seconds` once B's job is running; then B's
job is cancelled (unless the platform stopped it already) and the time to its end is recorded.
Target (the resource isolation issue): A's API p99 within 2x its quiet p99 in every phase.
Writes JSON; asserts nothing.

    python benchmarks/bench_hostile_tenant.py --out benchmarks/results/hostile_tenant.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from rlguard.io import write_json
from rlguard.platform.client import Client
from rlguard.platform.local import start_server
from rlguard.platform.volume import unmount
from rlguard.ports import unused_port

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = f"{sys.executable} {ROOT / 'tests' / 'platform' / 'hostile_job.py'}"
sys.path.insert(0, str(ROOT / "tests" / "platform"))
from test_resource_attacks import ATTACKS  # noqa: E402 (the battery's attacks, one list)

ARGS = ["--gpus", "2", "--grace-s", "5", "--job-disk-mb", "64", "--job-store-mb", "1"]
ARGS += ["--mount", f"tests={ROOT / 'tests'}:ro"]  # the jobs' script, in their view
ARGS += ["--job-reports-per-s", "50", "--job-reports-burst", "100"]


def _tenant(data: Path, name: str, quota: int) -> str:
    command = [sys.executable, "-m", "rlguard.cli", "tenants", "create", name, "--quota-gpus"]
    command += [str(quota), "--data-dir", str(data), "--json"]
    return json.loads(subprocess.run(command, check=True, capture_output=True).stdout)["api_key"]


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    a = np.asarray(values)
    return {
        "n": len(a),
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
    }


class Poller(threading.Thread):
    """A's GET of its job every 50 ms: (when, milliseconds) of each answer."""

    def __init__(self, url: str, key: str, job_id: str) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"})
        self.job_id, self.samples, self.done = job_id, [], threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            sent = time.time()
            try:
                self.client.get(f"/v1/jobs/{self.job_id}", timeout=30)
                self.samples.append((sent, 1000 * (time.time() - sent)))
            except httpx.HTTPError:
                self.samples.append((sent, 30_000.0))
            time.sleep(0.05)


def _evals(a: Client, job_id: str) -> list[tuple[float, float]]:
    log = a.http.get(f"/v1/jobs/{job_id}/logs", params={"tail": 100_000}).text
    rows = [line.split() for line in log.splitlines() if line.startswith("EVAL ")]
    return [(float(r[1]), float(r[3])) for r in rows]


def _phase(name: str, start: float, end: float, poller: Poller, evals: list) -> dict:
    gets = [ms for t, ms in poller.samples if start <= t < end]
    answers = [ms for t, ms in evals if start <= t < end]
    return {"phase": name, "a_get": _percentiles(gets), "a_eval": _percentiles(answers)}


def _wait_running(b: Client, job_id: str, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = b.job(job_id)["status"]
        if status not in ("queued", "starting", "validating"):
            return status
        time.sleep(0.2)
    return "never ran"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--attacks", default=",".join(ATTACKS))
    parser.add_argument("--out", type=Path, default=None)
    opts = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="rlguard-hostile-")) / "platform"
    port = unused_port()
    server = start_server(data, port, ARGS)
    url = f"http://127.0.0.1:{port}"
    try:
        key_a = _tenant(data, "a", 1)
        a, b = Client(url, key_a), Client(url, _tenant(data, "b", 1))
        victim = a.submit({"command": f"{HOSTILE} victim", "gpus": 1})["id"]
        if _wait_running(a, victim) != "running":
            raise RuntimeError(f"A's job did not run: {a.job(victim)['error']}")
        poller = Poller(url, key_a, victim)
        poller.start()
        marks = [("quiet", time.time())]
        time.sleep(opts.seconds)
        outcomes = {}
        for name in opts.attacks.split(","):
            job = b.submit({"command": f"{HOSTILE} {name}", "gpus": 1, **ATTACKS[name]})["id"]
            status = _wait_running(b, job)
            marks.append((name, time.time()))
            time.sleep(opts.seconds)
            marks.append(("gap", time.time()))
            started = time.monotonic()
            if b.job(job)["finished_at"] is None:
                b.cancel(job)
            ended = b.wait(job, timeout_s=120)
            outcomes[name] = {
                "ran": status,
                "status": ended["status"],
                "error": ended["error"],
                "seconds_to_end": round(time.monotonic() - started, 2),
            }
        marks.append(("end", time.time()))
        evals = _evals(a, victim)
        poller.done.set()
        phases = [
            _phase(name, start, marks[i + 1][1], poller, evals)
            for i, (name, start) in enumerate(marks[:-1])
            if name != "gap"
        ]
        quiet = phases[0]
        for phase in phases:
            for what in ("a_get", "a_eval"):
                if phase[what]["n"] and quiet[what]["n"]:
                    ratio = phase[what]["p99_ms"] / quiet[what]["p99_ms"]
                    phase[what]["p99_vs_quiet"] = round(ratio, 2)
            phase["b"] = outcomes.get(phase["phase"])
        report = {"host": host.node(), "cpus": os.cpu_count(), "args": ARGS}
        report |= {"seconds_per_phase": opts.seconds, "phases": phases}
        print(json.dumps(phases, indent=1))
        if opts.out:
            write_json(opts.out, report)
    finally:
        server.terminate()
        server.wait(timeout=120)
        unmount(data)  # the volumes of runs the stop did not reach


if __name__ == "__main__":
    main()
