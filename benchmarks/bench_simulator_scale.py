"""Simulator at scale: a million jobs on 64,000 GPUs, end to end, on one core.

Every run is a fresh `rlguard bench simulate` process (its peak RSS is its own) pinned to one
core with taskset where there is one, BLAS/OpenMP on one thread. Each records its command, the
process's wall and CPU seconds (on a shared machine CPU seconds are the steadier number) and the
load average around it. Runs: the big workload under three bases, its trace replayed from a CSV,
a standing queue, and the paper scenario at 20,000 and at the big size; with --baseline-src (the
src/ of an older checkout), the last two also with that code, for before/after ratios. Writes
JSON; asserts nothing.

    python benchmarks/bench_simulator_scale.py --baseline-src /tmp/base/src \\
        --out benchmarks/results/simulator_scale.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.workload import paper_stream
from rlguard.io import write_json

SRC = Path(__file__).resolve().parents[1] / "src"
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
# The CLI, reporting its process's peak RSS on stderr when it exits (older code does not report it).
LAUNCH = (
    "import atexit, resource, sys; "
    "atexit.register(lambda: print('peak_rss_kib', resource.getrusage(resource.RUSAGE_SELF)"
    ".ru_maxrss, file=sys.stderr)); "
    "from rlguard.cli import main; main()"
)


def bench(args: list[str], src: Path = SRC) -> dict:
    """Run `rlguard bench simulate ARGS` with the code in `src` in a fresh pinned process."""
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    command = [*pin, sys.executable, "-c", LAUNCH, "bench", "simulate", *args]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(src)}
    load_before = os.getloadavg()
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    peak = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("peak_rss_kib")]
    report["process"] = {
        "command": shlex.join(["rlguard", "bench", "simulate", *args]),
        "code": str(src),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round(int(peak[-1]) / 1024, 1),
        "load_avg_1min": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(report), flush=True)
    return report


def write_trace(path: Path, cfg: ScenarioConfig, seed: int) -> None:
    """A Tiresias-layout CSV of the paper scenario's sizes and arrivals (the overlay is redrawn
    when it is replayed)."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job_id", "num_gpu", "submit_time", "duration"])
        for block in paper_stream(cfg, seed).blocks:
            out.writerows(
                zip(
                    block.job_ids,
                    block.gpus.tolist(),
                    block.submit_s.tolist(),
                    block.duration_s.tolist(),
                    strict=True,
                )
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/simulator_scale.json"))
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--gpus", type=int, default=64_000)
    parser.add_argument(
        "--load", type=float, default=1.15, help="offered load of the big runs (see docs: Speed)"
    )
    parser.add_argument(
        "--bases", default="srtf-est,fifo,tiresias", help="bases of the big run (first: headline)"
    )
    parser.add_argument("--baseline-src", type=Path, help="src/ of the code to compare against")
    args = parser.parse_args()
    size = ["--jobs", str(args.jobs), "--gpus", str(args.gpus)]
    runs = {
        f"{base}_{args.jobs}_load{args.load}": bench(
            [*size, "--load", str(args.load), "--base", base, "--rule", "evalstop"]
        )
        for base in args.bases.split(",")
    }
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "paper.csv"
        write_trace(trace, ScenarioConfig(gpus=args.gpus, n_jobs=args.jobs, load=args.load), 0)
        runs[f"trace_replay_{args.jobs}"] = bench(["--trace", str(trace), "--gpus", str(args.gpus)])
    # A standing queue: a tenth of the jobs at four times the load fill the cluster in hours.
    queued = ["--jobs", str(args.jobs // 10), "--gpus", str(args.gpus), "--load", "4"]
    runs[f"srtf-est_{args.jobs // 10}_load4"] = bench(queued)
    # Before/after, with the older code's own command (it has no --load: both at 0.9).
    for name, same in (("20000", ["--jobs", "20000", "--gpus", "6400"]), (str(args.jobs), size)):
        runs[f"srtf-est_{name}_load0.9"] = after = bench(same)
        if args.baseline_src:
            runs[f"srtf-est_{name}_load0.9_before"] = before = bench(same, args.baseline_src)
            runs[f"ratio_{name}"] = {
                key: round(before["process"][key] / after["process"][key], 2)
                for key in ("wall_s", "cpu_s", "peak_rss_mb")
            }
    report = {
        "command": shlex.join([sys.executable, *sys.argv]),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "runs": runs,
    }
    write_json(args.out, report)


if __name__ == "__main__":
    main()
