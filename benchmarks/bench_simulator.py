"""Simulator speed: one seed of the paper scenario, and 20,000 jobs on 6,400 GPUs, on one core.

Targets (issue: cluster plane): paper seed < 1 s; 20k jobs / 6.4k GPUs < 10 s (Alibaba's PAI
simulator reports 52-110 s for 20,000 jobs on 6,500 GPUs). Writes JSON; asserts nothing.

    python benchmarks/bench_simulator.py --out benchmarks/results/simulator.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from rlguard.cluster.engine import Engine
from rlguard.cluster.registry import BASES, RULES, RuleParams
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.workload import paper_workload
from rlguard.io import write_json


def time_run(cfg: ScenarioConfig, seed: int, base: str, rule: str, repeats: int) -> dict:
    """Best of `repeats` wall times for generating and simulating one workload."""
    best_gen = best_sim = float("inf")
    events = 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        workload = paper_workload(cfg, seed)
        t1 = time.perf_counter()
        scheduler = Scheduler(BASES[base](), RULES[rule](RuleParams()))
        events = Engine(workload, scheduler, gpus=cfg.gpus).run().events
        t2 = time.perf_counter()
        best_gen, best_sim = min(best_gen, t1 - t0), min(best_sim, t2 - t1)
    return {
        "jobs": cfg.n_jobs,
        "gpus": cfg.gpus,
        "base": base,
        "rule": rule,
        "generate_s": round(best_gen, 4),
        "simulate_s": round(best_sim, 4),
        "total_s": round(best_gen + best_sim, 4),
        "jobs_per_s": round(cfg.n_jobs / best_sim, 1),
        "events": events,
        "events_per_s": round(events / best_sim, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/simulator.json"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    paper = ScenarioConfig()
    large = ScenarioConfig(gpus=6400, n_jobs=20000)
    runs = [time_run(paper, 0, base, "evalstop", args.repeats) for base in BASES]
    runs += [time_run(large, 0, base, "evalstop", 1) for base in ("srtf-est", "tiresias", "fifo")]
    report = {"machine": platform.platform(), "python": platform.python_version(), "runs": runs}
    write_json(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
