"""The full lab experiment, timed: `rlguard lab overoptimization` with its defaults (5 methods x
5 seeds on the default world), two runs at a time. Writes benchmarks/results/lab.json.

    python benchmarks/bench_lab.py [--out runs/lab-bench] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from rlguard.io import write_json
from rlguard.lab.experiment import LabConfig, overoptimization, quick_config

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("runs/lab-bench"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; the benchmark times a run from scratch")
    cfg = quick_config() if args.quick else LabConfig()
    began = time.perf_counter()
    result = overoptimization(cfg, args.out, workers=2)
    wall = time.perf_counter() - began
    name = "lab_quick.json" if args.quick else "lab.json"
    write_json(
        RESULTS / name,
        {
            "command": "python benchmarks/bench_lab.py" + (" --quick" if args.quick else ""),
            "wall_s": round(wall, 1),
            "cpus": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "methods": result["methods"],
            "stops": result["stops"],
        },
    )
    print(f"{wall:.0f} s; wrote {RESULTS / name}")


if __name__ == "__main__":
    main()
