"""Gradients accumulated over micro-batches (so a step's memory is bounded), then applied.

verl's order: the sampling-time quantities (the policy's and the critic's outputs before the
update) come from a no-grad pass a micro-batch at a time; the objective's `plan` then computes
every whole-batch statistic; then each micro-batch runs forward and backward on its share of the
whole batch's loss, so the summed gradients are the full batch's. A step without micro-batches is
the same path with one micro-batch; there, when the plan needs the sampling-time outputs of the
very rows it trains on, the training forward doubles as the sampling pass (no extra forward, as
TRL does when it trains once per generation).

Under FSDP (`sharding.py`) every process runs as many micro-batches as the process with the most,
the missing ones idle (zero weight), and the no-grad sampling pass runs on the gathered models.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.distributed.tensor import DTensor

from rlguard.train.config import TaskConfig
from rlguard.train.distributed import DataParallel
from rlguard.train.logprobs import completion_outputs, token_logprobs
from rlguard.train.objectives import AllSum, Chunk, Models, Objective, ScoredRollouts, Stats
from rlguard.train.precision import LossScale
from rlguard.train.rollout import Rollouts
from rlguard.train.sharding import UNSHARDED, Sharding


def micro_batches(rows: int, size: int | None, unit: int = 1) -> list[slice]:
    """Consecutive slices of at most `size` rows (whole units of `unit` rows, at least one unit);
    one slice of every row when `size` is None."""
    step = rows if size is None else max(unit, size // unit * unit)
    return [slice(start, min(start + step, rows)) for start in range(0, rows, max(step, 1))]


def forward(models: Models, rollouts: Rollouts, critic: bool) -> tuple[Tensor, Tensor | None]:
    """Policy token log-probs [n, C] and, for PPO, critic values [n, C] (zero at padding)."""
    logp = token_logprobs(models.policy, rollouts)
    if not critic:
        return logp, None
    values = completion_outputs(models.critic, rollouts).squeeze(-1).to(logp.device)
    return logp, values * rollouts.completion_mask


def logprobs_in_chunks(
    model: torch.nn.Module, rollouts: Rollouts, size: int | None, device: torch.device
) -> Tensor:
    """Token log-probs [N, C] of a frozen (or no-grad) model a micro-batch at a time, gathered
    on `device` (where they are used)."""
    return torch.cat(
        [
            token_logprobs(model, rollouts.take(rows)).to(device)
            for rows in micro_batches(len(rollouts), size)
        ]
    )


def idle_loss(models: Models, rollouts: Rollouts, critic: bool) -> Tensor:
    """A micro-batch that adds nothing: one row's forward and backward weighted zero, for a
    process with fewer micro-batches than another (FSDP's collectives need every process)."""
    logp, values = forward(models, rollouts.take(slice(0, 1)), critic)
    return 0.0 * (logp.sum() + (values.sum() if values is not None else 0.0))


def sampling_pass(
    models: Models, batch: ScoredRollouts, size: int | None, critic: bool, sharding: Sharding
) -> None:
    """Every sample's sampling-time outputs, without grad, a micro-batch at a time."""
    with torch.no_grad(), sharding.gathered():
        for rows in micro_batches(len(batch), size):
            batch.record(rows, *forward(models, batch.rollouts.take(rows), critic))


def accumulate(
    objective: Objective,
    models: Models,
    batch: ScoredRollouts,
    cfg: TaskConfig,
    size: int | None,
    backward: Callable[[Tensor], None],
    allsum: AllSum,
    sharding: Sharding = UNSHARDED,
) -> Stats:
    """Backward of one task's loss, a micro-batch at a time; its stats, "loss" included.

    `backward` takes each micro-batch's loss (the caller weights it by rho and scales it for
    fp16); `allsum` sums over the processes that share the batch."""
    pending = None  # a forward with grad that is also the sampling pass
    if batch.plan is None:
        if objective.plans_on_sampling and batch.old_logp is None:
            sampling_chunks = sharding.lockstep(len(micro_batches(len(batch), size)))
            if objective.on_samples and sampling_chunks == 1:
                pending = forward(models, batch.rollouts, objective.critic)
                batch.record(slice(None), *pending)
            else:
                sampling_pass(models, batch, size, objective.critic, sharding)
        batch.plan = objective.plan(batch, cfg, models.tokenizer, allsum)
    plan = batch.plan
    record = objective.on_samples and batch.old_logp is None  # GRPO's first update
    total = torch.zeros((), device=batch.rewards.device)
    stats = {"loss": 0.0, **plan.stats}
    chunks = micro_batches(len(plan.rows), size, plan.unit)
    count = sharding.lockstep(len(chunks))
    for i in range(count):
        sharding.reduce_in_backward(i == count - 1)
        if i >= len(chunks):
            backward(idle_loss(models, batch.rollouts, objective.critic))
            continue
        rows = chunks[i]
        logp, values = pending or forward(models, plan.rows.take(rows), objective.critic)
        pending = None
        if record:
            batch.record(rows, logp, values)
        loss, chunk_stats = objective.loss(Chunk(rows, logp, values), batch, plan, cfg)
        backward(loss)
        total += loss.detach()
        for name, value in chunk_stats.items():
            stats[name] = stats.get(name, 0.0) + value
    stats["loss"] = float(total)
    return stats


def optimizer_step(
    optimizer: torch.optim.Optimizer,
    max_grad_norm: float,
    scale: LossScale | None = None,
    processes: DataParallel | None = None,
) -> float:
    """Sum the accumulated gradients over the processes (unless FSDP's backward has: `processes`
    None), clip them to their global norm and step; the gradient norm (before clipping).

    A parameter no loss reached this update gets a zero gradient, as a zero loss would give it,
    so AdamW's moments still decay and every process sums the same set of gradients."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if processes is not None:
        processes.sum_gradients(params)  # scaled by fp16's loss scale: inf anywhere is everywhere
    scale = scale or LossScale("no", params[0].device)
    scale.unscale(optimizer)
    grad_norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm)  # FSDP: over every shard
    scale.step(optimizer)
    return float(grad_norm.full_tensor() if isinstance(grad_norm, DTensor) else grad_norm)
