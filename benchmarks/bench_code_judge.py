"""The code judge's speed (wall, and CPU: its process's and its sandboxes'), two source trees
side by side: the lab's code task (correct and flawed responses, three asserts each), judged by a
fresh CodeJudge (no verdict cache hits) per round.
Rounds alternate between the trees in one run, each in a child process importing that tree, so
both see the same machine load; each round then judges a trivial sample alone ten times, the
sandbox's own start-up cost (`startup_median_ms`). `--host-processes N` holds N idle processes
meanwhile: the sandbox scans the host's process table for its uid's processes around every run,
and a busy host (this project's test suite peaks near 600 processes) makes that scan the judge's
main cost.
Writes benchmarks/results/code_judge.json (or --out).

    python benchmarks/bench_code_judge.py --old /path/to/main/src --new src [--samples 48] \
        [--host-processes 400 --out benchmarks/results/code_judge_busy_host.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
STARTUP_SAMPLES = 10
TRIVIAL = "```python\ndef one():\n    return 1\n```"


def worker(samples: int) -> None:
    """Time one round in this process (the tree on sys.path); print wall seconds and verdicts."""
    import random
    import time

    from rlguard.judges.code import CodeJudge
    from rlguard.lab.tasks.functions import Functions

    rng, task = random.Random(0), Functions()
    rows = [task.prompt(rng) for _ in range(samples)]
    texts = [task.respond(r, rng, correct=i % 2 == 0, elaboration=1) for i, r in enumerate(rows)]
    judge = CodeJudge(max_workers=2)
    cpu = (os.times().user, os.times().system, os.times().children_user, os.times().children_system)
    start = time.perf_counter()
    verdicts = judge.judge([r.prompt for r in rows], texts, [r.metadata for r in rows])
    wall_s = time.perf_counter() - start
    now = os.times()
    judge_cpu = now.user + now.system - cpu[0] - cpu[1]
    sandbox_cpu = now.children_user + now.children_system - cpu[2] - cpu[3]
    startup = []
    for _ in range(STARTUP_SAMPLES):  # one trivial sample at a time: the sandbox's own cost
        lone = CodeJudge(max_workers=1)
        begin = time.perf_counter()
        lone.check("p", TRIVIAL, {"unit_tests": "assert one() == 1"})
        startup.append(time.perf_counter() - begin)
    result = {"wall_s": wall_s, "cpu_s": judge_cpu + sandbox_cpu, "verdicts": verdicts}
    print(json.dumps({**result, "startup_s": startup}))


def round_(src: str, samples: int) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--samples", str(samples)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", help="the baseline's src dir (required)")
    parser.add_argument("--new", default="src")
    parser.add_argument("--samples", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--host-processes", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "code_judge.json")
    parser.add_argument("--worker", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker(args.samples)
    if not args.old:
        parser.error("--old is required")
    times: dict[str, list[float]] = {"old": [], "new": []}
    cpus: dict[str, list[float]] = {"old": [], "new": []}
    startup: dict[str, list[float]] = {"old": [], "new": []}
    verdicts = {}
    idle = [subprocess.Popen(["sleep", "3600"]) for _ in range(args.host_processes)]
    try:
        for _ in range(args.rounds):
            for name in ("old", "new"):
                got = round_(getattr(args, name), args.samples)
                times[name].append(round(got["wall_s"], 3))
                cpus[name].append(round(got["cpu_s"], 3))
                startup[name].extend(got["startup_s"])
                verdicts[name] = got["verdicts"]
    finally:
        for process in idle:
            process.kill()
            process.wait()
    if verdicts["old"] != verdicts["new"]:
        raise SystemExit("error: the two trees disagree on honest samples")
    median = {name: statistics.median(t) for name, t in times.items()}
    result = {
        "command": " ".join(["python benchmarks/bench_code_judge.py", *sys.argv[1:]]),
        "samples": args.samples,
        "host_processes": args.host_processes,
        "rounds": args.rounds,
        "wall_s": times,
        "median_s": median,
        "new_over_old": round(median["new"] / median["old"], 3),
        "cpu_s": cpus,  # the judge's process and its sandboxes', user + system
        "median_cpu_s": (cpu_median := {name: statistics.median(c) for name, c in cpus.items()}),
        "cpu_new_over_old": round(cpu_median["new"] / cpu_median["old"], 3),
        # one trivial sample judged alone: the sandbox(es) start, run and end, nothing else
        "startup_median_ms": {
            name: round(1000 * statistics.median(found), 1) for name, found in startup.items()
        },
        "pass_rate": sum(v == 1 for v in verdicts["new"]) / args.samples,
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
