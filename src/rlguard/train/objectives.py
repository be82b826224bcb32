"""From a task's scored rollouts to its loss, one function per optimizer.

Every objective sees the same `ScoredRollouts`: P prompts x K samples, the judges' AND, the reward
model's scores, the calibrated rewards, and sampling-time log-probs of the policy and the reference.
CGPO's optimizers (CRPG, CRRAFT, CODPO) use the judges; the baselines (GRPO, PPO) optimize the raw
reward model score and ignore them, as the paper's PPO baseline does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlguard.train.config import TaskConfig
from rlguard.train.logprobs import completion_outputs, token_logprobs
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


@dataclass
class ScoredRollouts:
    """One task's batch after sampling, judging and scoring (everything but the policy's grad)."""

    rollouts: Rollouts
    k: int
    prompts: list[str]  # the P distinct prompts
    passed: torch.Tensor  # [N] bool: every judge returned 1
    rewards: torch.Tensor  # [N] reward-model scores
    ref_logp: torch.Tensor  # [N, C] frozen reference
    # a no-grad pass of the policy, only for optimizers that train on a subset of the samples
    # (the others set it from their own forward: with one update per batch they are equal)
    old_logp: torch.Tensor | None = None  # [N, C] policy at sampling time
    # only for optimizers in NEEDS_BASELINE:
    calibrated: torch.Tensor | None = None  # [N] sigmoid(r - r(a_bar))
    baselines: list[str] | None = None  # a_bar per prompt
    baseline_passed: torch.Tensor | None = None  # [P] bool

    old_values: torch.Tensor | None = None  # [N, C] PPO: the critic at sampling time

    def on_policy(self, logp: torch.Tensor) -> torch.Tensor:
        """The first update's token log-probs are the sampling-time ones (no extra forward);
        later updates of the same batch keep them, so ratios and clipping measure the drift."""
        if self.old_logp is None:
            self.old_logp = logp.detach()
        return logp

    @property
    def log_ratio(self) -> torch.Tensor:
        """Sequence-level log(pi / pi_ref) at sampling time, [N]."""
        if self.old_logp is None:
            raise ValueError("no sampling-time log-probs: call on_policy or compute old_logp")
        return (self.old_logp - self.ref_logp).sum(dim=1)

    def grouped(self, values: torch.Tensor) -> torch.Tensor:
        return values.view(-1, self.k)


@dataclass
class Models:
    policy: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    critic: nn.Module | None = None  # PPO only: a token classifier with one output


Stats = dict[str, float]
Objective = Callable[[Models, ScoredRollouts, TaskConfig], tuple[torch.Tensor, Stats]]


def crpg(models: Models, batch: ScoredRollouts, cfg: TaskConfig) -> tuple[torch.Tensor, Stats]:
    seq_logp = batch.on_policy(token_logprobs(models.policy, batch.rollouts)).sum(dim=1)
    weights = crpg_weights(batch.calibrated, batch.passed, batch.log_ratio, cfg.kl_max)
    return crpg_loss(seq_logp, weights), {"weight_mean": float(weights.mean())}


def crraft(models: Models, batch: ScoredRollouts, cfg: TaskConfig) -> tuple[torch.Tensor, Stats]:
    choices = crraft_select(  # a host-side decision: one copy, not a sync per prompt
        batch.grouped(batch.rewards).cpu(),
        batch.grouped(batch.passed).cpu(),
        batch.grouped(batch.log_ratio).cpu(),
        cfg.kl_max,
        batch.baseline_passed.cpu(),
    )
    sampled = [p * batch.k + c for p, c in enumerate(choices) if c is not None and c != BASELINE]
    fallback = [p for p, c in enumerate(choices) if c == BASELINE]
    seq_logps, weights = [], []
    if sampled:
        seq_logps.append(token_logprobs(models.policy, batch.rollouts.select(sampled)).sum(dim=1))
        weights.append(batch.calibrated[sampled])
    if fallback:
        encoded = encode_completions(
            models.tokenizer,
            [batch.prompts[p] for p in fallback],
            [batch.baselines[p] for p in fallback],
        ).to(batch.rewards.device)
        seq_logps.append(token_logprobs(models.policy, encoded).sum(dim=1))
        a_bar = torch.full((len(fallback),), 0.5, device=batch.rewards.device)  # sigmoid(0)
        weights.append(a_bar)
    if not seq_logps:
        return _zero(models.policy), {"selected": 0.0, "fallback": 0.0}
    loss = crraft_loss(torch.cat(seq_logps), torch.cat(weights))
    return loss, {"selected": float(len(sampled)), "fallback": float(len(fallback))}


def codpo(models: Models, batch: ScoredRollouts, cfg: TaskConfig) -> tuple[torch.Tensor, Stats]:
    per_prompt = codpo_pairs(  # a host-side decision: one copy, not a sync per prompt
        batch.grouped(batch.rewards).cpu(), batch.grouped(batch.passed).cpu()
    )
    pairs = [
        (p * batch.k + pair[0], p * batch.k + pair[1])
        for p, pair in enumerate(per_prompt)
        if pair is not None
    ]
    if not pairs:
        return _zero(models.policy), {"pairs": 0.0}
    chosen, rejected = [c for c, _ in pairs], [r for _, r in pairs]
    seq_logp = token_logprobs(models.policy, batch.rollouts.select(chosen + rejected)).sum(dim=1)
    ref = batch.ref_logp.sum(dim=1)
    loss = codpo_loss(
        seq_logp[: len(pairs)],
        seq_logp[len(pairs) :],
        ref[chosen],
        ref[rejected],
        batch.rollouts.lengths[chosen],
        cfg.beta,
        cfg.lam,
    )
    return loss, {"pairs": float(len(pairs))}


def grpo(models: Models, batch: ScoredRollouts, cfg: TaskConfig) -> tuple[torch.Tensor, Stats]:
    advantages = group_advantages(batch.grouped(batch.rewards)).flatten()
    logp = batch.on_policy(token_logprobs(models.policy, batch.rollouts))
    return grpo_loss(
        logp,
        batch.old_logp,
        batch.ref_logp,
        advantages,
        batch.rollouts.completion_mask,
        clip_eps=cfg.clip_eps,
        beta=cfg.beta,
    )


def ppo(models: Models, batch: ScoredRollouts, cfg: TaskConfig) -> tuple[torch.Tensor, Stats]:
    if models.critic is None:
        raise ValueError("PPO needs a critic")
    mask = batch.rollouts.completion_mask
    logp = batch.on_policy(token_logprobs(models.policy, batch.rollouts))
    values = completion_outputs(models.critic, batch.rollouts).squeeze(-1).to(logp.device) * mask
    if batch.old_values is None:
        batch.old_values = values.detach()
    old_values = batch.old_values
    rewards = token_rewards(batch.rewards, batch.old_logp, batch.ref_logp, mask, cfg.kl_coef)
    advantages, returns = gae(rewards, old_values, mask, cfg.gamma, cfg.gae_lambda)
    advantages = whiten(advantages, mask)
    policy_loss, clipfrac = ppo_policy_loss(logp, batch.old_logp, advantages, mask, cfg.clip_eps)
    value_loss = ppo_value_loss(values, old_values, returns, mask, cfg.clip_eps)
    stats = {"clipfrac": clipfrac, "value_loss": float(value_loss.detach())}
    return policy_loss + cfg.vf_coef * value_loss, stats


def _zero(model: nn.Module) -> torch.Tensor:
    """A zero loss on the graph: backward() stays uniform when a task has nothing to learn."""
    return sum(p.sum() for p in model.parameters() if p.requires_grad) * 0.0


NEEDS_BASELINE = frozenset({"crpg", "crraft"})  # use R_calib, hence a_bar
NEEDS_OLD_LOGP = frozenset({"crraft", "codpo"})  # train on a subset, judge all samples' KL

OBJECTIVES: dict[str, Objective] = {
    "crpg": crpg,
    "crraft": crraft,
    "codpo": codpo,
    "grpo": grpo,
    "ppo": ppo,
}
