"""Bradley-Terry loss against hand values and TRL 1.16's `RewardTrainer.compute_loss`."""

from __future__ import annotations

import math
import types
from collections import defaultdict

import pytest
import torch

from rlguard.train.optimizers import bradley_terry_loss, preference_accuracy


def test_hand_values_with_and_without_margin():
    rc, rr, margin = [1.0, -0.5, 2.0], [0.0, 0.5, 2.5], [0.5, 0.0, 1.0]
    plain = sum(math.log1p(math.exp(-(c - r))) for c, r in zip(rc, rr, strict=True)) / 3
    shifted = (
        sum(math.log1p(math.exp(-(c - r - m))) for c, r, m in zip(rc, rr, margin, strict=True)) / 3
    )
    t_rc, t_rr = torch.tensor(rc), torch.tensor(rr)
    assert bradley_terry_loss(t_rc, t_rr).item() == pytest.approx(plain)
    assert bradley_terry_loss(t_rc, t_rr, torch.tensor(margin)).item() == pytest.approx(shifted)


def test_accuracy_counts_ties_as_wrong():
    assert preference_accuracy(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 4.0])) == (
        pytest.approx(1 / 3)
    )


def _trl_reward_loss(rewards, margin):
    """TRL's `RewardTrainer.compute_loss` on a bare instance (`object.__new__`, no __init__), eval
    mode, with a fake model whose logits are the given [2N] rewards (chosen first)."""
    trl_reward = pytest.importorskip("trl.trainer.reward_trainer")

    class FakeModel(torch.nn.Module):
        def forward(self, **kwargs):
            return types.SimpleNamespace(logits=rewards.unsqueeze(-1))

    model = FakeModel().eval()
    trainer = object.__new__(trl_reward.RewardTrainer)
    trainer.__dict__.update(
        model=model,
        args=types.SimpleNamespace(center_rewards_coefficient=None),
        accelerator=types.SimpleNamespace(gather=lambda x: x, gather_for_metrics=lambda x: x),
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _total_train_tokens=0,
    )
    inputs = {"input_ids": torch.zeros(rewards.shape[0], 3, dtype=torch.long)}
    if margin is not None:
        inputs["margin"] = margin
    return trainer.compute_loss(model, inputs), trainer._metrics["eval"]


@pytest.mark.parametrize("with_margin", [False, True])
def test_equals_trl_reward_trainer(with_margin):
    gen = torch.Generator().manual_seed(0)
    rewards = torch.randn(10, generator=gen).requires_grad_()
    margin = torch.rand(5, generator=gen) if with_margin else None
    trl_loss, metrics = _trl_reward_loss(rewards, margin)
    (trl_grad,) = torch.autograd.grad(trl_loss, rewards)
    rc, rr = rewards.chunk(2)
    ours = bradley_terry_loss(rc, rr, margin)
    (our_grad,) = torch.autograd.grad(ours, rewards)
    assert ours.item() == pytest.approx(trl_loss.item(), rel=1e-6)
    assert torch.allclose(our_grad, trl_grad, atol=1e-7)
    assert preference_accuracy(rc, rr) == pytest.approx(metrics["accuracy"][0])
