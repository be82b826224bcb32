"""The lab's eval noise: one policy evaluated with several eval seeds, at one and at two answers
per held-out prompt, and what each eval costs. It is why the lab's Budget evaluates every 6 steps
with two answers per prompt. Writes benchmarks/results/lab_eval_noise.json.

    python benchmarks/bench_lab_eval_noise.py --lab runs/lab-bench [--run ppo-seed0] [--seeds 6]

Needs a finished lab experiment (its world, and the run whose best checkpoint is measured).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rlguard.io import write_json

RESULTS = Path(__file__).parent / "results"


def eval_scores(lab: Path, policy: Path, seeds: int, samples: int) -> tuple[list[float], float]:
    """The eval score under each eval seed, and the mean seconds per eval."""
    import torch

    from rlguard.lab.run import Budget, lab_trainer, run_config
    from rlguard.lab.world import World
    from rlguard.train.evaluation import evaluate

    torch.set_num_threads(1)
    world = World(lab / "world")
    config = run_config(world, "ppo", 0, Budget(), lab / "eval-noise")
    config = type(config)(**{**config.model_dump(), "policy": {"path": str(policy)}})
    trainer = lab_trainer(world, config)
    scores, began = [], time.perf_counter()
    for seed in range(seeds):
        result = evaluate(
            trainer.tasks,
            trainer.rollout,
            config.eval_prompts,
            1.0,
            seed,
            samples=samples,
            log_ratio=trainer.sequence_log_ratio,
        )
        scores.append(result.score)
    return scores, (time.perf_counter() - began) / seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lab", type=Path, required=True, help="a finished lab --out directory")
    parser.add_argument("--run", default="ppo-seed0")
    parser.add_argument("--seeds", type=int, default=6)
    args = parser.parse_args()
    policies = {
        "initial": args.lab / "world" / "sft" / "final",
        f"{args.run} best": args.lab / "runs" / args.run / "train" / "best",
    }
    rows = []
    for name, policy in policies.items():
        for samples in (1, 2):
            scores, eval_s = eval_scores(args.lab, policy, args.seeds, samples)
            rows.append(
                {
                    "policy": name,
                    "answers_per_prompt": samples,
                    "score_mean": statistics.mean(scores),
                    "score_sd": statistics.stdev(scores),
                    "eval_s": eval_s,
                    "scores": scores,
                }
            )
            print(f"{name}, {samples} per prompt: sd {rows[-1]['score_sd']:.4f}, {eval_s:.2f} s")
    write_json(
        RESULTS / "lab_eval_noise.json",
        {
            "command": f"python benchmarks/bench_lab_eval_noise.py --lab {args.lab} "
            f"--run {args.run} --seeds {args.seeds}",
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
