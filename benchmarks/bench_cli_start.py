"""How fast the client commands start: `rlguard jobs list` and `rlguard tenants --help` to their
first output, beside the interpreter alone and beside importing typer (the floor any typer CLI
pays). Writes benchmarks/results/cli_start.json.

    python benchmarks/bench_cli_start.py [--repeats 15]

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
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import typer": [sys.executable, "-c", "import typer"],
    "rlguard jobs list": [*RLGUARD, "jobs", "list"],
    "rlguard jobs --help": [*RLGUARD, "jobs", "--help"],
    "rlguard tenants --help": [*RLGUARD, "tenants", "--help"],
}


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and the process's CPU seconds (user + system): on a busy machine the wall
    includes waiting for a core, the CPU time does not."""
    env = {**os.environ, "RLGUARD_URL": "http://127.0.0.1:9", "RLGUARD_API_KEY": "x"}
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped by wait4
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS / "cli_start.json")
    args = parser.parse_args()
    for argv in COMMANDS.values():  # warm the page cache and .pyc files
        timed(argv)
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, argv in COMMANDS.items():
            wall, cpu = timed(argv)
            walls[name].append(wall)
            cpus[name].append(cpu)
    medians = {name: statistics.median(t) for name, t in walls.items()}
    floor = medians["import typer"]
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average": os.getloadavg(),
        "repeats": args.repeats,
        "median_s": {name: round(m, 4) for name, m in medians.items()},
        "median_cpu_s": {name: round(statistics.median(t), 4) for name, t in cpus.items()},
        "vs_import_typer": {name: round(m / floor, 2) for name, m in medians.items()},
    }
    write_json(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
