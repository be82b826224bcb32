"""From a task's scored rollouts to its loss, one objective per optimizer.

Every objective sees the same `ScoredRollouts`: P prompts x K samples, the judges' AND, the reward
model's scores, the calibrated rewards, and sampling-time log-probs of the policy and the reference.
CGPO's optimizers (CRPG, CRRAFT, CODPO) use the judges; the baselines (GRPO, PPO) optimize the raw
reward model score and ignore them, as the paper's PPO baseline does.

An objective works in two halves, so a batch can be trained a micro-batch at a time (verl's way):
`plan` decides everything that depends on the whole batch (baselines, advantages, whitening,
selections, pairs, and the denominators of every mean), without grad; `loss` is then one
micro-batch's share of the whole batch's loss: its sum over the micro-batch divided by the whole
batch's denominator. The shares add up to the full-batch loss, so their gradients do too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlguard.train.config import TaskConfig
from rlguard.train.optimizers import (
    BASELINE,
    codpo_loss,
    codpo_pairs,
    crpg_loss,
    crpg_weights,
    crraft_loss,
    crraft_select,
    gae,
    group_advantages,
    grpo_loss,
    ppo_policy_loss,
    ppo_value_loss,
    token_rewards,
    whiten,
)
from rlguard.train.rollout import Rollouts, encode_completions

Stats = dict[str, float]
AllSum = Callable[[Tensor], Tensor]
"""Sums a tensor over the processes that share a batch (the identity in one process)."""


@dataclass
class Plan:
    """One task's update, decided on its whole batch before any micro-batch runs."""

    rows: Rollouts  # what the loss trains on, `unit` consecutive rows at a time
    consts: dict[str, Tensor]  # per-row constants ([n] or [n, C]), cut with the rows
    whole: dict[str, Tensor]  # whole-batch quantities (over every process): denominators, means
    stats: Stats = field(default_factory=dict)  # counts: they add up over processes
    unit: int = 1  # rows that must share a micro-batch (CODPO: a chosen/rejected pair)


@dataclass
class ScoredRollouts:
    """One task's batch after sampling, judging and scoring (everything but the policy's grad)."""

    rollouts: Rollouts
    k: int
    prompts: list[str]  # the P distinct prompts
    passed: torch.Tensor  # [N] bool: every judge returned 1
    rewards: torch.Tensor  # [N] reward-model scores
    ref_logp: torch.Tensor  # [N, C] frozen reference
    # the policy (and PPO's critic) at sampling time: a no-grad pass, or the first update's own
    # forward when nothing has to be decided before it (see `accumulate`)
    old_logp: torch.Tensor | None = None  # [N, C]
    old_values: torch.Tensor | None = None  # [N, C]
    # only for optimizers in NEEDS_BASELINE:
    calibrated: torch.Tensor | None = None  # [N] sigmoid(r - r(a_bar))
    baselines: list[str] | None = None  # a_bar per prompt
    baseline_passed: torch.Tensor | None = None  # [P] bool
    plan: Plan | None = None  # made at the first update, kept for the batch's later ones

    def __len__(self) -> int:
        return len(self.rollouts)

    def record(self, rows: slice, logp: Tensor, values: Tensor | None = None) -> None:
        """The sampling-time log-probs (and values) of `rows`."""
        if self.old_logp is None:
            self.old_logp = torch.zeros_like(self.ref_logp)
        self.old_logp[rows] = logp.detach()
        if values is not None:
            if self.old_values is None:
                self.old_values = torch.zeros_like(self.ref_logp)
            self.old_values[rows] = values.detach()

    @property
    def log_ratio(self) -> torch.Tensor:
        """Sequence-level log(pi / pi_ref) at sampling time, [N]."""
        if self.old_logp is None:
            raise ValueError("no sampling-time log-probs yet")
        return (self.old_logp - self.ref_logp).sum(dim=1)

    def grouped(self, values: torch.Tensor) -> torch.Tensor:
        return values.view(-1, self.k)


@dataclass
class Models:
    policy: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    critic: nn.Module | None = None  # PPO only: a token classifier with one output


@dataclass
class Chunk:
    """One micro-batch: its rows of the plan and the forward's outputs on them (with grad)."""

    rows: slice
    logp: Tensor  # [n, C] policy token log-probs
    values: Tensor | None = None  # [n, C] critic values (PPO), zero at padding

    def take(self, tensor: Tensor) -> Tensor:
        return tensor[self.rows]


def share(part: Tensor | int, whole: Tensor) -> Tensor:
    """The weight of a micro-batch's mean over `part` items in the whole batch's mean over `whole`
    items: mean_whole = sum over micro-batches of share * mean_part."""
    return part / whole.clamp(min=1.0)


class Objective:
    """An optimizer's loss as `plan` (whole batch) and `loss` (one micro-batch's share)."""

    critic: ClassVar[bool] = False  # trains PPO's value model too
    on_samples: ClassVar[bool] = True  # plan.rows are the batch's samples, in order
    plans_on_sampling: ClassVar[bool] = True  # plan reads every sample's sampling-time outputs

    def plan(
        self,
        batch: ScoredRollouts,
        cfg: TaskConfig,
        tokenizer: PreTrainedTokenizerBase,
        allsum: AllSum,
    ) -> Plan:
        """Everything that depends on the whole batch, without grad; `allsum` sums a tensor over
        the processes that hold parts of the batch."""
        raise NotImplementedError

    def loss(
        self, chunk: Chunk, batch: ScoredRollouts, plan: Plan, cfg: TaskConfig
    ) -> tuple[Tensor, Stats]:
        """The micro-batch's share of the loss and of each stat: shares add up over the
        micro-batches and the processes to the whole batch's values."""
        raise NotImplementedError


def count(n: int, like: Tensor, allsum: AllSum) -> Tensor:
    """How many items the whole batch has, over every process that holds part of it."""
    return allsum(torch.tensor(float(n), device=like.device))


class CRPG(Objective):
    def plan(self, batch, cfg, tokenizer, allsum):
        weights = crpg_weights(batch.calibrated, batch.passed, batch.log_ratio, cfg.kl_max)
        n = count(len(batch), weights, allsum)
        baseline = allsum(weights.sum()) / n
        whole = {"samples": n, "baseline": baseline}
        return Plan(batch.rollouts, {"weights": weights}, whole)

    def loss(self, chunk, batch, plan, cfg):
        seq_logp, weights = chunk.logp.sum(dim=1), chunk.take(plan.consts["weights"])
        loss = crpg_loss(seq_logp, weights, plan.whole["baseline"])
        weight_mean = float(share(weights.sum(), plan.whole["samples"]))
        return loss * share(len(seq_logp), plan.whole["samples"]), {"weight_mean": weight_mean}


class CRRAFT(Objective):
    on_samples = False

    def plan(self, batch, cfg, tokenizer, allsum):
        choices = crraft_select(  # a host-side decision: one copy, not a sync per prompt
            batch.grouped(batch.rewards).cpu(),
            batch.grouped(batch.passed).cpu(),
            batch.grouped(batch.log_ratio).cpu(),
            cfg.kl_max,
            batch.baseline_passed.cpu(),
        )
        k = batch.k
        sampled = [p * k + c for p, c in enumerate(choices) if c is not None and c != BASELINE]
        fallback = [p for p, c in enumerate(choices) if c == BASELINE]
        rows = batch.rollouts.select(sampled)
        if fallback:
            encoded = encode_completions(
                tokenizer,
                [batch.prompts[p] for p in fallback],
                [batch.baselines[p] for p in fallback],
            )
            encoded.prompt_index = fallback
            rows = Rollouts.concat([rows, encoded.to(batch.rewards.device)])
        a_bar = torch.full((len(fallback),), 0.5, device=batch.rewards.device)  # sigmoid(0)
        weights = torch.cat([batch.calibrated[sampled], a_bar])
        whole = {"selected": count(len(rows), weights, allsum)}
        stats = {"selected": float(len(sampled)), "fallback": float(len(fallback))}
        return Plan(rows, {"weights": weights}, whole, stats)

    def loss(self, chunk, batch, plan, cfg):
        seq_logp = chunk.logp.sum(dim=1)
        loss = crraft_loss(seq_logp, chunk.take(plan.consts["weights"]))
        return loss * share(len(seq_logp), plan.whole["selected"]), {}


class CODPO(Objective):
    on_samples = False

    def plan(self, batch, cfg, tokenizer, allsum):
        per_prompt = codpo_pairs(  # a host-side decision: one copy, not a sync per prompt
            batch.grouped(batch.rewards).cpu(), batch.grouped(batch.passed).cpu()
        )
        k = batch.k
        # chosen and rejected of a pair are consecutive rows, so a micro-batch never splits one
        rows = [p * k + i for p, pair in enumerate(per_prompt) if pair is not None for i in pair]
        consts = {
            "ref": batch.ref_logp.sum(dim=1)[rows],
            "lengths": batch.rollouts.lengths[rows],
        }
        whole = {"pairs": count(len(rows) // 2, batch.rewards, allsum)}
        stats = {"pairs": float(len(rows) // 2)}
        return Plan(batch.rollouts.select(rows), consts, whole, stats, unit=2)

    def loss(self, chunk, batch, plan, cfg):
        seq_logp = chunk.logp.sum(dim=1).view(-1, 2)
        ref = chunk.take(plan.consts["ref"]).view(-1, 2)
        lengths = chunk.take(plan.consts["lengths"]).view(-1, 2)
        loss = codpo_loss(
            seq_logp[:, 0], seq_logp[:, 1], ref[:, 0], ref[:, 1], lengths[:, 0], cfg.beta, cfg.lam
        )
        return loss * share(len(seq_logp), plan.whole["pairs"]), {}


class GRPO(Objective):
    plans_on_sampling = False  # advantages come from rewards alone

    def plan(self, batch, cfg, tokenizer, allsum):
        advantages = group_advantages(batch.grouped(batch.rewards)).flatten()
        mask = batch.rollouts.completion_mask
        whole = {
            "samples": count(len(batch), advantages, allsum),
            "tokens": allsum(mask.sum()),
        }
        return Plan(batch.rollouts, {"advantages": advantages}, whole)

    def loss(self, chunk, batch, plan, cfg):
        mask = chunk.take(batch.rollouts.completion_mask)
        loss, stats = grpo_loss(
            chunk.logp,
            chunk.take(batch.old_logp),
            chunk.take(batch.ref_logp),
            chunk.take(plan.consts["advantages"]),
            mask,
            clip_eps=cfg.clip_eps,
            beta=cfg.beta,
        )
        # loss type "grpo": a mean over sequences; its stats are means over tokens
        tokens = float(share(mask.sum(), plan.whole["tokens"]))
        stats = {name: value * tokens for name, value in stats.items()}
        return loss * share(len(mask), plan.whole["samples"]), stats


class PPO(Objective):
    critic = True

    def plan(self, batch, cfg, tokenizer, allsum):
        mask = batch.rollouts.completion_mask
        rewards = token_rewards(batch.rewards, batch.old_logp, batch.ref_logp, mask, cfg.kl_coef)
        advantages, returns = gae(rewards, batch.old_values, mask, cfg.gamma, cfg.gae_lambda)
        advantages = whiten(advantages, mask, allsum=allsum)
        consts = {"advantages": advantages, "returns": returns}
        return Plan(batch.rollouts, consts, {"tokens": allsum(mask.sum())})

    def loss(self, chunk, batch, plan, cfg):
        mask = chunk.take(batch.rollouts.completion_mask)
        old_logp = chunk.take(batch.old_logp)
        advantages = chunk.take(plan.consts["advantages"])
        policy_loss, clipfrac = ppo_policy_loss(
            chunk.logp, old_logp, advantages, mask, cfg.clip_eps
        )
        value_loss = ppo_value_loss(
            chunk.values,
            chunk.take(batch.old_values),
            chunk.take(plan.consts["returns"]),
            mask,
            cfg.clip_eps,
        )
        # both are means over tokens
        tokens = share(mask.sum(), plan.whole["tokens"])
        value_loss = value_loss * tokens
        stats = {"clipfrac": clipfrac * float(tokens), "value_loss": float(value_loss.detach())}
        return policy_loss * tokens + cfg.vf_coef * value_loss, stats


NEEDS_BASELINE = frozenset({"crpg", "crraft"})  # use R_calib, hence a_bar

OBJECTIVES: dict[str, Objective] = {
    "crpg": CRPG(),
    "crraft": CRRAFT(),
    "codpo": CODPO(),
    "grpo": GRPO(),
    "ppo": PPO(),
}
