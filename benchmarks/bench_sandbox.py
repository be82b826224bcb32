"""What the job sandbox costs: start-up and eval ingestion, with and without it, in one run.

For each mode a real `rlguard serve` (local Ray head) runs; `--single-tenant` is the unsandboxed
baseline. Per mode:
  * start-up: submit -> the job's first eval stored (the scheduler pass, Ray's actor, the
    sandbox, the interpreter, one report), median of `--jobs` jobs run one after another;
  * spawn: the bare process start, `python -c pass` directly and inside the same bwrap command
    line a job gets (no Ray, no server), median of 20;
  * ingestion: one job posting `--evals` evals back to back with the platform's client (through
    the sandbox's forwarded socket when sandboxed), evals per second measured inside the job.

    python benchmarks/bench_sandbox.py --out benchmarks/results/sandbox.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))

from live_platform import LiveServer, free_port

from rlguard.io import write_json

FIRST_EVAL = (
    "from rlguard.platform.client import JobReporter; JobReporter.from_env().eval(1, 0.5, 1.0)"
)
FLOOD = """
import json, os, time
from rlguard.platform.client import JobReporter
r = JobReporter.from_env()
n = {n}
t = time.perf_counter()
for i in range(n):
    r.eval(i, 0.5, (i + 1) / n)
rate = n / (time.perf_counter() - t)
open(os.environ["RLGUARD_OUTPUT_DIR"] + "/rate.json", "w").write(json.dumps(rate))
"""


def _py(code: str) -> str:
    return f"{sys.executable} -c {shlex.quote(code)}"


def _startup(client, jobs: int) -> list[float]:
    seconds = []
    for _ in range(jobs):
        job = client.submit({"command": _py(FIRST_EVAL), "gpus": 1})
        client.wait(job["id"], timeout_s=300, poll_s=0.1)
        evals = [e for e in client.all_events(job["id"]) if e["type"] == "eval"]
        seconds.append(evals[0]["created_at"] - client.job(job["id"])["created_at"])
    return seconds


def _ingestion(server, client, evals: int) -> float:
    job = client.submit({"command": _py(FLOOD.format(n=evals)), "gpus": 1})
    done = client.wait(job["id"], timeout_s=600)
    assert done["status"] == "succeeded", done["error"]
    return json.loads((server.data_dir / "jobs" / job["id"] / "output" / "rate.json").read_text())


def _spawn(sandboxed: bool, root: Path, repeats: int = 20) -> list[float]:
    from rlguard.platform.jobview import MiB
    from rlguard.platform.sandbox import JobSandbox, Limits, bwrap_argv

    job = root / "data" / "job"
    job.mkdir(parents=True, exist_ok=True)
    socket = root / "sock"
    socket.touch()
    argv = [sys.executable, "-c", "pass"]
    if sandboxed:
        from rlguard.platform.jobview import code_roots

        limits = Limits(1024 * MiB, 256, 0, 1024 * MiB, 64 * MiB)
        box = JobSandbox(0, str(job), str(root / "data"), tuple(code_roots()), limits, "x")
        argv = bwrap_argv(box, argv, str(job), str(socket))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append(time.perf_counter() - start)
    return times


def measure(sandboxed: bool, jobs: int, evals: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="rlguard-bench-sandbox-"))
    extra = [] if sandboxed else ["--single-tenant"]
    server = LiveServer(root / "platform", free_port(), None, ["--gpus", "1", *extra])
    server.data_dir.mkdir(parents=True)
    server.start()
    try:
        client = server.client(server.tenant("bench", quota_gpus=1)[1])
        startup = _startup(client, jobs)
        rate = _ingestion(server, client, evals)
    finally:
        server.stop()
    spawn = _spawn(sandboxed, root)
    return {
        "startup_s": {"median": statistics.median(startup), "all": startup},
        "spawn_s": {"median": statistics.median(spawn), "min": min(spawn)},
        "evals_per_s": rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sandbox.json"))
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--evals", type=int, default=300)
    args = parser.parse_args()
    started = time.time()
    result = {
        "sandboxed": measure(True, args.jobs, args.evals),
        "single_tenant": measure(False, args.jobs, args.evals),
        "jobs": args.jobs,
        "evals": args.evals,
        "wall_s": round(time.time() - started, 1),
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
