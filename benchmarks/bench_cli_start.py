"""How fast the client commands start: `rlguard jobs list` and `rlguard tenants --help` to their
first output, beside the interpreter alone and beside importing typer (the floor any typer CLI
pays). Writes benchmarks/results/cli_start.json.

    python benchmarks/bench_cli_start.py [--repeats 15] [--baseline OTHER/src]

`--baseline` times the same rlguard commands from another checkout's src too (as `main: ...`,
interleaved with this one's), so a change is measured against its base in the same run.
`jobs list` runs against a closed loopback port, so it measures start-up and one failed connect
(its one-line error, exit 2), not a server. Commands are interleaved round by round and reported
as medians, so a busy machine slows each about alike; read the ratios before the seconds, and
the CPU seconds (user + system) as what a command costs on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rlguard.io import write_json

RESULTS = Path(__file__).parent / "results"
RLGUARD = [sys.executable, "-m", "rlguard.cli"]
BASE = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import typer": [sys.executable, "-c", "import typer"],
}
RLGUARD_COMMANDS = {
    "rlguard jobs list": [*RLGUARD, "jobs", "list"],
    "rlguard jobs --help": [*RLGUARD, "jobs", "--help"],
    "rlguard tenants --help": [*RLGUARD, "tenants", "--help"],
}
# name -> (argv, PYTHONPATH or None for this process's)
Commands = dict[str, tuple[list[str], str | None]]


def commands(baseline: Path | None) -> Commands:
    found: Commands = {name: (argv, None) for name, argv in {**BASE, **RLGUARD_COMMANDS}.items()}
    if baseline is not None:
        for name, argv in RLGUARD_COMMANDS.items():
            found[f"main: {name}"] = (argv, str(baseline.resolve()))
    return found


def timed(argv: list[str], pythonpath: str | None = None) -> tuple[float, float]:
    """Wall seconds and the process's CPU seconds (user + system): on a busy machine the wall
    includes waiting for a core, the CPU time does not."""
    env = {**os.environ, "RLGUARD_URL": "http://127.0.0.1:9", "RLGUARD_API_KEY": "x"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped by wait4
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS / "cli_start.json")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout's src: its rlguard commands timed too"
    )
    args = parser.parse_args()
    timing = commands(args.baseline)
    for argv, pythonpath in timing.values():  # warm the page cache and .pyc files
        timed(argv, pythonpath)
    walls: dict[str, list[float]] = {name: [] for name in timing}
    cpus: dict[str, list[float]] = {name: [] for name in timing}
    for _ in range(args.repeats):
        for name, (argv, pythonpath) in timing.items():
            wall, cpu = timed(argv, pythonpath)
            walls[name].append(wall)
            cpus[name].append(cpu)
    medians = {name: statistics.median(t) for name, t in walls.items()}
    cpu_medians = {name: statistics.median(t) for name, t in cpus.items()}
    floor = medians["import typer"]
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average": os.getloadavg(),
        "repeats": args.repeats,
        "median_s": {name: round(m, 4) for name, m in medians.items()},
        "median_cpu_s": {name: round(m, 4) for name, m in cpu_medians.items()},
        "vs_import_typer": {name: round(m / floor, 2) for name, m in medians.items()},
    }
    if args.baseline is not None:  # this checkout's CPU time over the baseline's, per command
        result["cpu_vs_baseline"] = {
            name: round(cpu_medians[name] / cpu_medians[f"main: {name}"], 3)
            for name in RLGUARD_COMMANDS
        }
    write_json(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
