"""One training step per optimizer on the fixed world, in whichever processes run it: under
`accelerate launch` each process saves the step's gradients, updated weights and metrics, with and
without micro-batches, to OUT/<optimizer>-<micro_batch_size>-<rank>.pt.

    python dp_worker.py WORLD_DIR OUT_DIR [SHARDING [MIXED_PRECISION [OPTIMIZER,...]]]

SHARDING (default none) is the config's `sharding`; under fsdp each process saves the whole
gradients and weights (gathered from the shards), and how many micro-batches it had and ran.
MIXED_PRECISION (default no) is the config's; with fp16 the loss scale starts at 2^18, so that
some updates overflow and are skipped, and each process also saves the scale after the step.
OPTIMIZER,... (default every one) limits the optimizers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from torch.distributed.tensor import DTensor

from fixed_world import PromptRollout, away_from_reference, make_trainer
from tiny_models import tiny_tokenizer

OPTIMIZERS = ["crpg", "crraft", "codpo", "grpo", "ppo"]
MICRO_BATCH_SIZES = [None, 2]


def whole(tensor):
    """A copy of the whole tensor (gathered from every process when it is a shard)."""
    return tensor.full_tensor() if isinstance(tensor, DTensor) else tensor.detach().clone()


def one_step(
    world, optimizer, micro_batch_size=None, sharding="none", lockstep=None, precision="no"
):
    """(every trained parameter's gradient in the step's last update, its weight after the step,
    the step's metrics, the trainer): 6 prompts x K=3 per task, two updates, the policy away from
    the reference. `lockstep`, when given, collects (this process's micro-batches, those it ran)."""
    trainer = make_trainer(
        world,
        optimizers=(optimizer, optimizer),
        loop={
            "learning_rate": 3e-2,
            "updates_per_batch": 2,
            "micro_batch_size": micro_batch_size,
            "sharding": sharding,
            "mixed_precision": precision,
        },
        rollout=PromptRollout,
        k=3,
        batch_size=6,
        kl_max=1.0,
    )
    away_from_reference(trainer)
    if precision == "fp16":
        state = trainer.loss_scale.state_dict()
        trainer.loss_scale.load_state_dict({**state, "scale": 2.0**18})
    if lockstep is not None:
        counted = trainer.sharding.lockstep
        trainer.sharding.lockstep = lambda n: lockstep.append((n, counted(n))) or lockstep[-1][1]
    metrics = trainer.training_step(1)
    named = [
        (f"{model}.{name}", p)
        for model, module in trainer._trained().items()
        for name, p in module.named_parameters()
    ]
    grads = {name: whole(p.grad) for name, p in named}
    weights = {name: whole(p) for name, p in named}
    return grads, weights, metrics, trainer


if __name__ == "__main__":
    torch.set_num_threads(1)
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    sharding = sys.argv[3] if len(sys.argv) > 3 else "none"
    precision = sys.argv[4] if len(sys.argv) > 4 else "no"
    optimizers = sys.argv[5].split(",") if len(sys.argv) > 5 else OPTIMIZERS
    world = (root, tiny_tokenizer())
    rank = os.environ.get("RANK", 0)
    for optimizer in optimizers:
        for size in MICRO_BATCH_SIZES:
            lockstep = []
            grads, weights, metrics, trainer = one_step(
                world, optimizer, size, sharding, lockstep, precision
            )
            scaler = trainer.loss_scale.scaler
            saved = {
                "grads": grads,
                "weights": weights,
                "metrics": metrics,
                "processes": os.environ.get("WORLD_SIZE"),
                "lockstep": lockstep,
                "scale": scaler.get_scale() if scaler else None,
            }
            torch.save(saved, out / f"{optimizer}-{size}-{rank}.pt")
