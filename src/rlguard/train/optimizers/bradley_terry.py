"""Bradley-Terry pairwise loss for reward models, as TRL's `RewardTrainer.compute_loss`."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def bradley_terry_loss(
    r_chosen: Tensor, r_rejected: Tensor, margin: Tensor | None = None
) -> Tensor:
    """Scalar mean of -log sigmoid(r_chosen - r_rejected - margin); all [N], margin optional.

    A margin asks the model to separate strongly preferred pairs by more.
    """
    diff = r_chosen - r_rejected
    if margin is not None:
        diff = diff - margin
    return -F.logsigmoid(diff).mean()


def preference_accuracy(r_chosen: Tensor, r_rejected: Tensor) -> float:
    """Fraction of pairs with r_chosen > r_rejected strictly (ties count as wrong, as in TRL)."""
    with torch.no_grad():
        return float((r_chosen > r_rejected).float().mean())
