"""GRPO (Shao et al. 2024) with TRL 1.16's loss semantics (`GRPOTrainer._compute_loss`).

Token-level tensors are [B, T] (B completions, T completion positions) with `mask` [B, T] marking
completion tokens. Only the symmetric token-level clip is implemented; TRL's asymmetric
epsilon_low/high, sequence-level importance sampling, and the "cispo", "sapo", "vespo" and "luspo"
losses are not.
"""

from __future__ import annotations

import torch
from torch import Tensor

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")


def group_advantages(rewards: Tensor, scale: bool = True, eps: float = 1e-4) -> Tensor:
    """[P, K] advantages: reward minus its group mean, divided by (group std + eps) when `scale`.

    The std is unbiased (Bessel), as TRL's `nanstd`; a group of one has std 0, as in TRL.
    `scale=False` is Dr. GRPO's centring only, which avoids favouring low-variance groups.
    """
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    if not scale:
        return centered
    std = rewards.std(dim=1, keepdim=True) if rewards.shape[1] > 1 else torch.zeros_like(centered)
    return centered / (std + eps)


def grpo_loss(
    logp: Tensor,
    old_logp: Tensor,
    ref_logp: Tensor | None,
    advantages: Tensor,
    mask: Tensor,
    clip_eps: float = 0.2,
    beta: float = 0.0,
    loss_type: str = "grpo",
    *,
    max_completion_length: int | None = None,
    num_items_in_batch: float | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """Clipped surrogate plus beta * k3 KL, reduced as TRL's `loss_type`; returns (loss, stats).

    logp: [B, T] policy token log-probs (with grad); old_logp: [B, T] from the sampling policy
    (pass `logp.detach()` when on-policy); ref_logp: [B, T] frozen reference, needed when beta != 0
    (also used for the "kl" stat); advantages: [B]; mask: [B, T].
    Reductions: "grpo" mean over sequences of each sequence's token mean; "bnpo" token sum over the
    batch's token count; "dr_grpo" token sum / (B * max_completion_length, default T); "dapo" token
    sum / num_items_in_batch (TRL: completion tokens of the whole generation batch, default this
    batch's). TRL's gradient-accumulation scaling is left to the caller.
    stats: "clip_ratio" = masked mean of tokens whose ratio is clipped in the direction of the
    advantage (TRL's clip_ratio/region_mean); "kl" = masked mean of the k3 KL (0.0 without
    ref_logp).
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    if beta != 0.0 and ref_logp is None:
        raise ValueError("beta != 0 needs ref_logp")
    mask = mask.to(logp.dtype)
    adv = advantages.detach().unsqueeze(1)
    ratio = torch.exp(logp - old_logp.detach())
    clipped = torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    per_token = -torch.min(ratio * adv, clipped * adv)
    per_token_kl = None
    if ref_logp is not None:
        diff = ref_logp.detach() - logp
        per_token_kl = torch.exp(diff) - diff - 1
        if beta != 0.0:
            per_token = per_token + beta * per_token_kl

    tokens = mask.sum().clamp(min=1.0)
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "bnpo":
        loss = (per_token * mask).sum() / tokens
    elif loss_type == "dr_grpo":
        length = logp.shape[1] if max_completion_length is None else max_completion_length
        loss = (per_token * mask).sum() / (logp.shape[0] * length)
    else:
        items = tokens if num_items_in_batch is None else max(float(num_items_in_batch), 1.0)
        loss = (per_token * mask).sum() / items

    with torch.no_grad():
        region = ((ratio < 1 - clip_eps) & (adv < 0)) | ((ratio > 1 + clip_eps) & (adv > 0))
        stats = {
            "clip_ratio": float((region.to(mask.dtype) * mask).sum() / tokens),
            "kl": 0.0 if per_token_kl is None else float((per_token_kl * mask).sum() / tokens),
        }
    return loss, stats
