"""What the job sandbox costs a CUDA job's start-up, with and without it, in one run (a GPU node).

Each start is a fresh interpreter that imports torch and makes its first CUDA allocation, the
part of a GPU job's start the sandbox can slow (bwrap's mounts, the device nodes, the cgroup).
Plain and sandboxed starts alternate, `--repeats` of each; the sandboxed one is started as a
run's actor starts it (confine.py) with Ray's GPU id 0, so CUDA is told the GPU by its UUID.
Needs no Ray and no server, only root, bubblewrap and a GPU:

    PYTHONPATH=src python benchmarks/bench_sandbox_gpu.py \
        --out benchmarks/results/sandbox_gpu_h200.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))

from direct_sandbox import run_job

from rlguard.io import write_json
from rlguard.platform import gpus, joblimits
from rlguard.platform.jobview import host_problem
from rlguard.platform.sandbox import Limits

MiB = 1 << 20
LIMITS = Limits(8192 * MiB, 512, 0, 1024 * MiB, 64 * MiB)
START = """
import json, os, torch
torch.zeros(1, device="cuda")
print(json.dumps({"gpu": torch.cuda.get_device_name(0), "count": torch.cuda.device_count(),
                  "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}))
"""


def start(kind: str, workdir: Path) -> tuple[float, dict]:
    """One start, plain or sandboxed: its seconds and what the job saw."""
    began = time.perf_counter()
    if kind == "plain":
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "0"}
        argv = [sys.executable, "-c", START]
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
    else:
        done = run_job(workdir, START, LIMITS, ("0",))
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(
            f"error: a {kind} start failed (exit {done.returncode}): {done.stderr[-500:]}"
        )
    return seconds, json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/sandbox_gpu.json"))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    problem = host_problem()
    if problem is not None or not gpus.node_gpus():
        print(
            f"error: this host cannot run the check: {problem or 'the driver lists no GPU'}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    root = Path(tempfile.mkdtemp(prefix="rlguard-bench-sandbox-gpu-"))
    seconds: dict[str, list[float]] = {"plain": [], "sandboxed": []}
    seen = {}
    for i in range(args.repeats):
        for kind, runs in seconds.items():
            s, seen[kind] = start(kind, root / f"start-{i}")
            runs.append(round(s, 3))
    result = {
        "node": {"cgroup": joblimits.describe(), "gpus": [g.__dict__ for g in gpus.node_gpus()]},
        "seen_by_the_job": seen,
        "startup_s": {k: {"median": statistics.median(v), "all": v} for k, v in seconds.items()},
        "sandboxed_over_plain": statistics.median(seconds["sandboxed"])
        / statistics.median(seconds["plain"]),
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
