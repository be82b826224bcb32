"""One training step per optimizer on the fixed world, in whichever processes run it: under
`accelerate launch` each process saves its gradients and metrics, with and without micro-batches,
to OUT/<optimizer>-<micro_batch_size>-<rank>.pt.

    python dp_worker.py WORLD_DIR OUT_DIR
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from fixed_world import PromptRollout, away_from_reference, make_trainer
from tiny_models import tiny_tokenizer

OPTIMIZERS = ["crpg", "crraft", "codpo", "grpo", "ppo"]
MICRO_BATCH_SIZES = [None, 2]


def one_step(world, optimizer, micro_batch_size=None):
    """(every trained parameter's gradient in the step's last update, the step's metrics):
    6 prompts x K=3 per task, two updates, the policy away from the reference."""
    trainer = make_trainer(
        world,
        optimizers=(optimizer, optimizer),
        loop={
            "learning_rate": 3e-2,
            "updates_per_batch": 2,
            "micro_batch_size": micro_batch_size,
        },
        rollout=PromptRollout,
        k=3,
        batch_size=6,
        kl_max=1.0,
    )
    away_from_reference(trainer)
    metrics = trainer.training_step(1)
    grads = {
        f"{model}.{name}": p.grad.clone()
        for model, module in trainer._trained().items()
        for name, p in module.named_parameters()
    }
    return grads, metrics


if __name__ == "__main__":
    torch.set_num_threads(1)
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    world = (root, tiny_tokenizer())
    rank = os.environ.get("RANK", 0)
    for optimizer in OPTIMIZERS:
        for size in MICRO_BATCH_SIZES:
            grads, metrics = one_step(world, optimizer, size)
            saved = {"grads": grads, "metrics": metrics, "processes": os.environ.get("WORLD_SIZE")}
            torch.save(saved, out / f"{optimizer}-{size}-{rank}.pt")
