"""What a Prometheus scrape of GET /metrics costs the server at a cloud's scale.

A store (SQLite, as `rlguard serve` makes by default) filled directly with `--tenants` tenants,
`--jobs` jobs spread over every state, two runs per job and a stop decision per ten jobs; then
the metrics text the route serves is built `--repeats` times in process (the store's queries, the
scheduler's state, the eval counters; no HTTP). Reports the median and worst build time and the
text's size.

    python benchmarks/bench_metrics.py --out benchmarks/results/metrics.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from prometheus_client import generate_latest
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))

from in_process import in_process_platform

from rlguard.io import write_json
from rlguard.platform import states
from rlguard.platform.db import DecisionRecord, Job, Run, Tenant
from rlguard.platform.metrics import EvalCounts, registry

END_REASONS = ("exited", "lost", "preempt", "early_stop", "cancel")


def fill(platform_, tenants: int, jobs: int) -> None:
    now = time.time()
    tenant_rows = [
        {"id": f"t{i}", "name": f"tenant-{i}", "quota_gpus": 8, "created_at": now}
        for i in range(tenants)
    ]
    job_rows, run_rows, decision_rows = [], [], []
    for i in range(jobs):
        job_id = f"job-{i}"
        job_rows.append(
            {
                "id": job_id,
                "tenant_id": f"t{i % tenants}",
                "kind": "command",
                "job_kind": "rlhf",
                "spec": {},
                "gpus": 1,
                "cpus": 1.0,
                "estimate_s": 600.0,
                "stop_policy": {},
                "status": states.ALL[i % len(states.ALL)],
                "created_at": now,
                "uploaded_bytes": i,
            }
        )
        for attempt in (1, 2):
            run_rows.append(
                {
                    "id": f"{job_id}-{attempt}",
                    "job_id": job_id,
                    "attempt": attempt,
                    "status": "ended",
                    "started_at": now,
                    "end_reason": END_REASONS[(i + attempt) % len(END_REASONS)],
                }
            )
        if i % 10 == 0:
            decision_rows.append(
                {
                    "id": f"d{i}",
                    "job_id": job_id,
                    "event_seq": 1,
                    "rule": "evalstop",
                    "params": {},
                    "stop": True,
                    "shadow": i % 20 == 0,
                    "reason": "2 declines",
                    "evidence": {},
                    "created_at": now,
                }
            )
    with platform_.store.transaction() as s:
        s.execute(insert(Tenant), tenant_rows)
        s.execute(insert(Job), job_rows)
        s.execute(insert(Run), run_rows)
        s.execute(insert(DecisionRecord), decision_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/metrics.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, in_process_platform(Path(tmp)) as platform_:
        fill(platform_, args.tenants, args.jobs)
        found = registry(platform_, EvalCounts())
        seconds, text = [], b""
        for _ in range(args.repeats):
            start = time.perf_counter()
            text = generate_latest(found)
            seconds.append(time.perf_counter() - start)
    result = {
        "command": " ".join(["python benchmarks/bench_metrics.py", *sys.argv[1:]]),
        "store": "sqlite",
        "tenants": args.tenants,
        "jobs": args.jobs,
        "runs": 2 * args.jobs,
        "repeats": args.repeats,
        "scrape_ms": {
            "median": round(1000 * statistics.median(seconds), 1),
            "max": round(1000 * max(seconds), 1),
        },
        "series": sum(1 for line in text.decode().splitlines() if not line.startswith("#")),
        "bytes": len(text),
        "machine": platform.processor() or platform.machine(),
    }
    write_json(args.out, result)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
