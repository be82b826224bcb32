"""Real RLHF steps on this machine: the serverful verl-style pool against the serverless executor
and its four ablations, on Ray, from measured times (what `rlguard runtime bench --json` prints).
Writes JSON; asserts nothing.

    python benchmarks/bench_runtime_real.py --out benchmarks/results/runtime_real.json
    python benchmarks/bench_runtime_real.py --keep-alive 0 \
        --out benchmarks/results/runtime_real_scale_to_zero.json
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import torch

from rlguard.io import write_json
from rlguard.runtime.executors.bench import BenchSettings, local_ray, run_bench
from rlguard.runtime.policies.pricing import Prices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/runtime_real.json"))
    parser.add_argument("--keep-alive", type=float, default=Prices().keep_alive_s)
    parser.add_argument("--steps", type=int, default=BenchSettings().steps)
    args = parser.parse_args()
    torch.set_num_threads(1)
    prices = dataclasses.replace(Prices(), keep_alive_s=args.keep_alive)
    started = time.perf_counter()
    with local_ray(), tempfile.TemporaryDirectory(prefix="rlguard-bench-") as root:
        payload = run_bench(BenchSettings(steps=args.steps), Path(root), prices, print)
    payload["config"]["bench_wall_s"] = time.perf_counter() - started
    write_json(args.out, payload)


if __name__ == "__main__":
    main()
