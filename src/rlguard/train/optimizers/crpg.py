"""CRPG (CGPO, arXiv 2409.20370): critic-free policy gradient on calibrated, judge-gated rewards.

Weights are R~ = max(1 - log_ratio / KL_max, 0) * R_cr with R_cr = R_calib if all judges pass else
0 and log_ratio = seq_logp - ref_seq_logp at sequence level. The KL factor is not capped at 1, so
samples the policy likes less than the reference get more than their reward.
"""

from __future__ import annotations

import torch
from torch import Tensor


def crpg_weights(calibrated: Tensor, passed: Tensor, log_ratio: Tensor, kl_max: float) -> Tensor:
    """[N] constant weights R~ from calibrated rewards, judge verdicts (bool), log-ratios ([N])."""
    if kl_max <= 0:
        raise ValueError(f"kl_max must be > 0, got {kl_max}")
    with torch.no_grad():
        kl_factor = (1.0 - log_ratio / kl_max).clamp(min=0.0)
        r_cr = torch.where(passed.bool(), calibrated, torch.zeros_like(calibrated))
        return kl_factor * r_cr


def crpg_loss(seq_logp: Tensor, weights: Tensor, baseline: Tensor | float | None = None) -> Tensor:
    """Scalar -(1/n) sum seq_logp_i * (w_i - mean w); its gradient is the CRPG update.

    seq_logp: [N] policy sequence log-probs (with grad); weights: [N] from `crpg_weights`, detached.
    The batch mean of the weights is the baseline, so no critic is needed; a micro-batch of a
    larger batch passes that batch's mean as `baseline`.
    """
    if seq_logp.numel() == 0:
        return seq_logp.sum() * 0.0
    w = weights.detach()
    return -(seq_logp * (w - (w.mean() if baseline is None else baseline))).mean()
