"""Watched jobs end to end: from an eval written by a job that does not speak rlguard to the
platform's stop decision, and from that decision to the job's run ending.

A real `rlguard serve` (sandboxed where the host can, as the tests run it; 4 virtual GPUs,
EvalStop k=3), and per `--poll-s` value `--jobs` hacking command jobs side by side
(tests/platform/watched_job.py: a JSONL line per eval every `--pause-s`, each line holding the
time it was written), watched with that poll interval. Per job: the stop decision's time in the
store minus the time its eval line was written (the watcher's poll, the HTTP report, the group
commit and the rule), and the run's end in the store minus the decision (the watcher's SIGTERM,
the job's exit, the actor's last poll and delivery, the scheduling loop noticing the end).
Writes JSON; asserts nothing.

    python benchmarks/bench_watched_jobs.py --out benchmarks/results/watched_jobs.json
"""

from __future__ import annotations

import argparse
import json
import platform as host
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))
from live_platform import LiveServer, free_port, sql_engine
from test_watched_jobs import HACKING, WATCH, command

from rlguard.io import write_json

STOPS = text(
    "select d.job_id, d.created_at, e.data from decisions d join events e"
    " on e.job_id = d.job_id and e.seq = d.event_seq where d.stop"
)
ENDS = text("select job_id, max(ended_at) from runs group by job_id")


def written_at(job_dir: Path, step: int) -> float:
    for line in (job_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["step"] == step and "time" in record:
            return float(record["time"])
    raise LookupError(f"no eval of step {step} in {job_dir}")


def stats(values: list[float]) -> dict[str, float]:
    ms = np.array(values) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "max_ms": round(float(ms.max()), 1),
        "mean_ms": round(float(ms.mean()), 1),
    }


def run(poll_s: float, jobs: int, pause_s: float) -> dict:
    data = Path(tempfile.mkdtemp(prefix="rlguard-bench-watched-"))
    server = LiveServer(data, free_port(), None, ["--gpus", str(jobs), "--k", "3"]).start()
    try:
        _, key = server.tenant("bench", quota_gpus=jobs)
        client = server.client(key)
        body = {"command": command(HACKING, pause_s, 2), "watch": {**WATCH, "poll_s": poll_s}}
        ids = [client.submit(body)["id"] for _ in range(jobs)]
        for job_id in ids:
            assert client.wait(job_id, timeout_s=300)["status"] == "early_stopped"
        engine = sql_engine(server.db_url)
        with engine.connect() as c:
            stops = c.execute(STOPS).all()
            ends = dict(c.execute(ENDS).all())
        engine.dispose()
        to_decision, to_end = [], []
        for job_id, decided_at, data_ in stops:
            step = (json.loads(data_) if isinstance(data_, str) else data_)["step"]
            to_decision.append(decided_at - written_at(data / "jobs" / job_id, step))
            to_end.append(ends[job_id] - decided_at)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    return {
        "poll_s": poll_s,
        "jobs": jobs,
        "written_to_decision": stats(to_decision),
        "decision_to_run_end": stats(to_end),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/watched_jobs.json"))
    parser.add_argument("--poll-s", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--pause-s", type=float, default=0.6)
    args = parser.parse_args()
    rows = [run(poll, args.jobs, args.pause_s) for poll in args.poll_s]
    result = {
        "host": {"machine": host.machine(), "python": host.python_version()},
        "rows": rows,
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
