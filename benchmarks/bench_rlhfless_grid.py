"""RLHFless against the verl baseline on the paper's whole grid, with the calibrated step model:
Qwen2.5-3B and 7B, PPO and GRPO, GSM8K, GPQA and LiveCodeBench (responses <= 2048, prompts <=
1024), on the 16-L40S testbed and at 20 nodes (160 L40S), on vLLM's V1 engine (eager or CUDA
graphs: the same in the calibrated model) and its V0 engine, eager. Per cell: the baseline's step
and generation share, RLHFless with the paper's components alone (`no-overlap`), our overlap as a
labelled addition, and what each component contributes. The best cell is the "up to" figure to
set against 1.35x / 44.8% and 1.23x / 38.7%. Asserts nothing.

    python benchmarks/bench_rlhfless_grid.py --seeds 3 --out benchmarks/results/rlhfless_grid.json

`--only SCALE/ENGINE/MODEL/ALGORITHM/WORKLOAD ...` runs those cells alone and puts them into the
file at `--out` in place of the same cells (a grid finished in parts; `parts` says which run
measured which cells).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

from rlguard.io import write_json
from rlguard.runtime.calib.coefficients import EngineArgs
from rlguard.runtime.calib.comm import EXAMPLE_MINI_BATCH, TrainerSettings
from rlguard.runtime.calib.job import calibrated_for
from rlguard.runtime.calib.workloads import WORKLOADS
from rlguard.runtime.policies.pricing import load_prices
from rlguard.runtime.sim.experiment import run_setup
from rlguard.runtime.sim.setups import PAPER_RESULTS, Setup

MODELS = ("qwen2.5-3b", "qwen2.5-7b")
ALGORITHMS = ("ppo", "grpo")
# GPUs, and prompts per step: verl's GSM8K examples (1024 prompts; GRPO 5 samples each, PPO 1);
# at 20 nodes each GPU keeps the testbed's share of the batch (the paper does not give it).
SCALES = {"testbed": (16, 1024), "large": (160, 10240)}
# vLLM's V1 engine (verl's from vLLM 0.8; eager or with CUDA graphs alike in the model, whose
# fitted V1 launches hide behind the GPU's work) and the V0 engine, eager (vLLM before 0.8, or a
# V0 fallback such as XFORMERS attention)
ENGINES = {
    "v1": EngineArgs(enforce_eager=True, vllm_engine="v1"),
    "v0-eager": EngineArgs(enforce_eager=True, vllm_engine="v0"),
}
COMPONENTS = ("no-dedup", "no-assign", "no-migrate", "no-scaling")


def cell_setup(model: str, algorithm: str, workload: str, scale: str, engine: EngineArgs) -> Setup:
    n_gpus, prompts = SCALES[scale]
    k = 5 if algorithm == "grpo" else 1
    return Setup(
        name=f"{scale}/{model}/{algorithm}/{workload}",
        n_gpus=n_gpus,
        profile=f"calibrated {model} on L40S",
        algorithm=algorithm,
        prompts_per_step=prompts,
        k=k,
        workload=WORKLOADS[workload].length_model(prompts * k),
    )


def run_cell(
    setup: Setup, model: str, engine: EngineArgs, workload: str, seeds: int
) -> dict[str, Any]:
    # the trainer: verl's GRPO example (FSDP), its collectives at one L40S's PCIe bandwidth; its
    # 256 prompts a mini-batch are the testbed's, scaled with the GPUs so that at 20 nodes each
    # GPU keeps the testbed's share of an optimizer step, as it keeps its share of the batch
    stats = WORKLOADS[workload]
    mean = stats.prompt_length_mean + stats.response_length_mean
    mini = EXAMPLE_MINI_BATCH * setup.n_gpus // SCALES["testbed"][0]
    trainer = TrainerSettings(mini_batch_prompts=mini)
    layout = trainer.layout(setup.n_gpus, setup.prompts_per_step, setup.k, mean)
    profile = calibrated_for(model, "l40s", engine, layout, "bench_rlhfless_grid")
    payload = run_setup(setup, profile, load_prices(None), range(seeds))
    base, ablation = payload["baseline"], payload["ablation"]
    paper_only = ablation["no-overlap"]
    return {
        "baseline_step_s": round(base["step_s"], 2),
        "baseline_generation_share": round(base["phases"]["generation"] / base["step_s"], 3),
        "paper_components": {
            "speedup": round(paper_only["speedup"], 3),
            "cost_cut": round(paper_only["cost_cut"], 3),
        },
        "with_overlap": {
            "speedup": round(payload["speedup"], 3),
            "cost_cut": round(payload["cost_cut"], 3),
        },
        # what the full executor loses without each component (speedup points, cost-cut points)
        "component_contribution": {
            name.removeprefix("no-"): {
                "speedup": round(payload["speedup"] - ablation[name]["speedup"], 3),
                "cost_cut": round(payload["cost_cut"] - ablation[name]["cost_cut"], 3),
            }
            for name in COMPONENTS
        },
    }


def best(cells: list[dict[str, Any]], scale: str, key: str) -> dict[str, Any]:
    mine = [c for c in cells if c["scale"] == scale]
    top = max(mine, key=lambda c: c[key]["speedup"])
    speedup, cut = PAPER_RESULTS[f"paper-{scale}"]
    return {
        "cell": {k: top[k] for k in ("model", "algorithm", "workload", "engine")},
        **top[key],
        "largest_cost_cut": max(c[key]["cost_cut"] for c in mine),
        "paper": {"speedup": speedup, "cost_cut": cut},
    }


CELL = ("scale", "engine", "model", "algorithm", "workload")


def merged(
    out: Path, new: list[dict[str, Any]], part: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cells at `out` with `new` in place of the same cells, and the parts that measured
    them: the earlier file's (its note kept) and this one."""
    earlier = json.loads(out.read_text())
    fresh = {tuple(c[k] for k in CELL): c for c in new}
    cells = [fresh.pop(tuple(c[k] for k in CELL), c) for c in earlier["cells"]]
    first = {"command": earlier["command"], "cells": len(earlier["cells"])}
    if "partial" in earlier:
        first["note"] = earlier["partial"]
    only = ["/".join(c[k] for k in CELL) for c in new]
    return [*cells, *fresh.values()], [*earlier.get("parts", [first]), {**part, "only": only}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/rlhfless_grid.json"))
    parser.add_argument("--only", nargs="+", metavar="SCALE/ENGINE/MODEL/ALGORITHM/WORKLOAD")
    args = parser.parse_args()
    start = time.perf_counter()
    cells = []
    grid = list(itertools.product(SCALES, ENGINES, MODELS, ALGORITHMS, WORKLOADS))
    if args.only:
        unknown = set(args.only) - {"/".join(cell) for cell in grid}
        if unknown:
            parser.error(f"--only: no such cell {sorted(unknown)[0]!r}")
        grid = [cell for cell in grid if "/".join(cell) in args.only]
    for scale, engine, model, algorithm, workload in grid:
        setup = cell_setup(model, algorithm, workload, scale, ENGINES[engine])
        result = run_cell(setup, model, ENGINES[engine], workload, args.seeds)
        cell = dict(scale=scale, engine=engine, model=model, algorithm=algorithm)
        cells.append({**cell, "workload": workload, **result})
        print(setup.name, engine, result["paper_components"], result["with_overlap"], flush=True)
    command = f"python benchmarks/bench_rlhfless_grid.py --seeds {args.seeds}"
    part = {"command": command, "cells": len(cells), "wall_s": round(time.perf_counter() - start)}
    parts = [part]
    if args.only:
        cells, parts = merged(args.out, cells, part)
    payload = {
        "command": command,
        "parts": parts,
        "seeds": args.seeds,
        "workloads": {name: w.describe() for name, w in WORKLOADS.items()},
        "best": {
            scale: {key: best(cells, scale, key) for key in ("paper_components", "with_overlap")}
            for scale in SCALES
        },
        "cells": cells,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    write_json(args.out, payload)
    print(args.out)


if __name__ == "__main__":
    main()
