"""PPO for RLHF (Ziegler et al. 2019), following the old TRL `PPOTrainer` (removed from TRL 1.x).

Token-level tensors are [B, T] with `mask` [B, T] of completion tokens, padded on the right.
Differences from that TRL trainer: the score lands on the last completion token (TRL put it one
position later, on the token after EOS), and the KL penalty is the k1 estimate logp - ref_logp.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def token_rewards(
    scores: Tensor, logp: Tensor, ref_logp: Tensor, mask: Tensor, kl_coef: float
) -> Tensor:
    """[B, T] per-token rewards: -kl_coef * (logp - ref_logp), plus the score [B] at the last token.

    Computed without grad; padded positions are 0; a row with no completion token gets no score.
    """
    with torch.no_grad():
        mask = mask.to(logp.dtype)
        rewards = -kl_coef * (logp - ref_logp) * mask
        width = mask.shape[1]
        last = width - 1 - mask.flip(1).argmax(dim=1)
        has_tokens = mask.sum(dim=1) > 0
        bonus = torch.where(has_tokens, scores.to(rewards.dtype), torch.zeros_like(rewards[:, 0]))
        return rewards.scatter_add(1, last.unsqueeze(1), bonus.unsqueeze(1))


def gae(
    rewards: Tensor, values: Tensor, mask: Tensor, gamma: float, lam: float
) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation; returns (advantages, returns), both [B, T], 0 at padding.

    rewards, values: [B, T] (old value estimates). The value after the last completion token is 0
    (episode end). Advantages are not whitened: call `whiten` on them, as TRL did.
    """
    with torch.no_grad():
        mask = mask.to(values.dtype)
        rewards = rewards * mask
        values = values * mask
        next_adv = torch.zeros_like(values[:, 0])
        reversed_adv = []
        for t in reversed(range(values.shape[1])):
            next_value = values[:, t + 1] if t + 1 < values.shape[1] else torch.zeros_like(next_adv)
            delta = rewards[:, t] + gamma * next_value - values[:, t]
            next_adv = delta + gamma * lam * next_adv
            reversed_adv.append(next_adv)
        advantages = torch.stack(reversed_adv[::-1], dim=1) * mask
        return advantages, (advantages + values) * mask


def whiten(
    x: Tensor,
    mask: Tensor,
    shift_mean: bool = True,
    eps: float = 1e-8,
    allsum: Callable[[Tensor], Tensor] | None = None,
) -> Tensor:
    """[B, T] x scaled by its masked mean and unbiased std, as TRL's `masked_whiten`; 0 at padding.

    shift_mean=False adds the mean back (TRL's choice for whitening rewards: scale only).
    `allsum` sums a tensor over the processes that share the batch, so the moments are the whole
    batch's when its rows are spread over data-parallel ranks.
    """
    total = allsum or (lambda t: t)
    mask = mask.to(x.dtype)
    count = total(mask.sum())
    mean = total((x * mask).sum()) / count.clamp(min=1.0)
    var = total(((x - mean) ** 2 * mask).sum()) / (count - 1).clamp(min=1.0)
    out = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        out = out + mean
    return out * mask


def ppo_policy_loss(
    logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, clip_eps: float
) -> tuple[Tensor, float]:
    """(masked mean of max(-A * ratio, -A * clip(ratio)), fraction of tokens where the clip binds).

    logp: [B, T] with grad; old_logp, advantages: [B, T] constants; mask: [B, T].
    """
    mask = mask.to(logp.dtype)
    adv = advantages.detach()
    ratio = torch.exp(logp - old_logp.detach())
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)
    loss = _masked_mean(torch.max(unclipped, clipped), mask)
    with torch.no_grad():
        clipfrac = float(_masked_mean((clipped > unclipped).to(mask.dtype), mask))
    return loss, clipfrac


def ppo_value_loss(
    values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor, clip_value: float
) -> Tensor:
    """0.5 * masked mean of max((v - R)^2, (clip(v, old +- clip_value) - R)^2); all [B, T]."""
    mask = mask.to(values.dtype)
    old = old_values.detach()
    target = returns.detach()
    clipped = torch.clamp(values, old - clip_value, old + clip_value)
    worst = torch.max((values - target) ** 2, (clipped - target) ** 2)
    return 0.5 * _masked_mean(worst, mask)
