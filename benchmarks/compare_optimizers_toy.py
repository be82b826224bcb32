"""Every optimizer on the toy world: does the judges' pass rate rise, and what does the proxy do?

SFT once per seed, then 40 steps of each optimizer on the two toy tasks (math judge; IFEval
lowercase + no comma), all else equal (K=4, 8 prompts per task, lr 5e-4, the length-liking proxy
reward). CGPO's optimizers see the judges; GRPO and PPO optimize the proxy alone. Writes JSON with
each run's eval score (judges' pass rate on held-out prompts) and proxy at every evaluation.

    python benchmarks/compare_optimizers_toy.py --out benchmarks/results/optimizers_toy.json
    python benchmarks/compare_optimizers_toy.py --seeds 5 --optimizers crpg --out FILE  # seeds
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rlguard.io import write_json
from rlguard.train.toy_runs import sft_toy, toy_config
from rlguard.train.trainer import CGPOTrainer

OPTIMIZERS = ("crpg", "crraft", "codpo", "grpo", "ppo")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument(
        "--optimizers",
        default=",".join(OPTIMIZERS),
        help="a comma list of " + ", ".join(OPTIMIZERS),
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    optimizers = args.optimizers.split(",")
    if unknown := set(optimizers) - set(OPTIMIZERS):
        parser.error(f"--optimizers: unknown {', '.join(sorted(unknown))}")
    torch.set_num_threads(1)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            root = Path(tmp) / f"seed{seed}"
            policy = sft_toy(root, seed=seed)
            for optimizer in optimizers:
                config = toy_config(
                    root,
                    policy,
                    optimizer,
                    seed=seed,
                    steps=args.steps,
                    task={"optimizer": optimizer, "kl_max": 10.0},
                )
                began = time.perf_counter()
                CGPOTrainer(config, progress=False).train()
                wall = time.perf_counter() - began
                events = [
                    json.loads(line) for line in (root / optimizer / "eval_events.jsonl").open()
                ]
                runs.append(
                    {
                        "seed": seed,
                        "optimizer": optimizer,
                        "wall_s": round(wall, 2),
                        "steps": [e["step"] for e in events],
                        "score": [round(e["score"], 4) for e in events],
                        "proxy": [round(e["proxy"], 4) for e in events],
                    }
                )
                print(optimizer, seed, runs[-1]["score"], flush=True)
    summary = {}
    for optimizer in optimizers:
        mine = [r for r in runs if r["optimizer"] == optimizer]
        summary[optimizer] = {
            "score_start": statistics.mean(r["score"][0] for r in mine),
            "score_end": statistics.mean(r["score"][-1] for r in mine),
            "proxy_start": statistics.mean(r["proxy"][0] for r in mine),
            "proxy_end": statistics.mean(r["proxy"][-1] for r in mine),
            "wall_s": statistics.mean(r["wall_s"] for r in mine),
        }
    write_json(
        args.out,
        {"settings": vars(args) | {"out": str(args.out)}, "summary": summary, "runs": runs},
    )
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
