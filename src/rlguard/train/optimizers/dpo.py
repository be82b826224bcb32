"""Sigmoid DPO (Rafailov et al. 2023) on precomputed sequence log-probabilities.

All inputs are [N] tensors: the summed token log-probs of each chosen/rejected completion under the
policy (`*_logp`, with grad) and under the frozen reference (`ref_*_logp`, treated as constants).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def dpo_logits(
    chosen_logp: Tensor, rejected_logp: Tensor, ref_chosen_logp: Tensor, ref_rejected_logp: Tensor
) -> Tensor:
    """[N] margin of log-ratios (c - rc) - (r - rr), before beta; shared by DPO and CODPO."""
    return (chosen_logp - ref_chosen_logp.detach()) - (rejected_logp - ref_rejected_logp.detach())


def dpo_loss(
    chosen_logp: Tensor,
    rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    beta: float,
) -> Tensor:
    """[N] per-pair loss -log sigmoid(beta * margin); the caller picks the reduction."""
    logits = dpo_logits(chosen_logp, rejected_logp, ref_chosen_logp, ref_rejected_logp)
    return -F.logsigmoid(beta * logits)


def dpo_rewards(
    chosen_logp: Tensor,
    rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    beta: float,
) -> tuple[Tensor, Tensor]:
    """([N], [N]) implicit rewards beta * log-ratio of chosen and rejected, detached (logging)."""
    with torch.no_grad():
        return beta * (chosen_logp - ref_chosen_logp), beta * (rejected_logp - ref_rejected_logp)
