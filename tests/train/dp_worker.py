"""Every data-parallel case of tests/train/test_data_parallel.py in one launch (each launch costs
its processes' imports of torch and transformers, far more than the steps themselves): under
`accelerate launch` each process runs one training step per optimizer, with and without
micro-batches, for each (sharding, mixed precision) of RUNS, and saves the step's gradients,
updated weights and metrics to OUT/<sharding>-<precision>/<optimizer>-<micro_batch_size>-<rank>.pt;
then `inf_in_one_shard` to OUT/inf-shard/<rank>.pt.

    python dp_worker.py WORLD_DIR OUT_DIR

Under fsdp each process saves the whole gradients and weights (gathered from the shards), and how
many micro-batches it had and ran. With fp16 the loss scale starts at 2^18, so that some updates
overflow and are skipped, and each process also saves the scale after the step.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from torch import nn
from torch.distributed.tensor import DTensor

from fixed_world import PromptRollout, away_from_reference, make_trainer
from rlguard.train.distributed import DataParallel
from rlguard.train.precision import LossScale
from rlguard.train.sharding import Sharding
from tiny_models import tiny_tokenizer

OPTIMIZERS = ["crpg", "crraft", "codpo", "grpo", "ppo"]
MICRO_BATCH_SIZES = [None, 2]
FP16_OPTIMIZERS = ["crraft", "ppo"]
RUNS = [  # (sharding, mixed precision, optimizers)
    ("none", "no", OPTIMIZERS),
    ("fsdp", "no", OPTIMIZERS),
    ("none", "fp16", FP16_OPTIMIZERS),
    ("fsdp", "fp16", FP16_OPTIMIZERS),
]


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


def save_steps(world, out: Path, sharding: str, precision: str, optimizers: list[str]) -> None:
    """One step per optimizer and micro-batch size, each saved as the module docstring says."""
    out.mkdir(parents=True, exist_ok=True)
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


def inf_in_one_shard(out: Path) -> None:
    """fp16 under FSDP with an inf in the last process's shard only: each process shards a small
    model, runs one backward, sets its first gradient shard to inf on the last process alone, and
    saves whether its weights moved and its loss scale after the step, to OUT/<rank>.pt."""
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    processes = DataParallel(torch.device("cpu"))
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
    Sharding("fsdp", processes).shard([model])
    scale = LossScale("fp16", processes.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    before = [p.full_tensor().clone() for p in model.parameters()]
    scale.backward(model(torch.randn(4, 8)).square().mean())
    if processes.rank == processes.size - 1:
        next(model.parameters()).grad.to_local().fill_(float("inf"))
    scale.unscale(optimizer)
    scale.step(optimizer)
    moved = any(
        not torch.equal(p.full_tensor(), b) for p, b in zip(model.parameters(), before, strict=True)
    )
    torch.save({"moved": moved, "scale": scale.scaler.get_scale()}, out / f"{processes.rank}.pt")


if __name__ == "__main__":
    torch.set_num_threads(1)
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    world = (root, tiny_tokenizer())
    for sharding, precision, optimizers in RUNS:
        save_steps(world, out / f"{sharding}-{precision}", sharding, precision, optimizers)
    inf_in_one_shard(out / "inf-shard")
