"""GRPO advantages and loss against hand values and TRL 1.16's `GRPOTrainer._compute_loss`."""

from __future__ import annotations

import math
import types
from collections import defaultdict

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.train.optimizers import group_advantages, grpo_loss


def test_group_advantages_hand_values():
    rewards = [1.0, 2.0, 3.0, 6.0]
    mean = sum(rewards) / 4
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 3)  # unbiased
    got = group_advantages(torch.tensor([rewards], dtype=torch.float64))
    assert got[0].tolist() == pytest.approx([(r - mean) / (std + 1e-4) for r in rewards])
    centered = group_advantages(torch.tensor([rewards]), scale=False)
    assert centered[0].tolist() == pytest.approx([r - mean for r in rewards])


def test_group_of_one_and_constant_group_give_zero():
    assert group_advantages(torch.tensor([[0.7], [0.1]])).tolist() == [[0.0], [0.0]]
    assert group_advantages(torch.tensor([[0.5, 0.5, 0.5]])).abs().max().item() == 0.0


def test_group_advantages_equal_trl_formula():
    trl_utils = pytest.importorskip("trl.trainer.utils")
    rewards = torch.tensor([[0.1, 0.9, 0.4, 0.2], [-1.0, 3.0, 0.0, 0.5]])
    # trl/trainer/grpo_trainer.py (1.16) lines 2765-2787, scale_rewards="group":
    k = rewards.shape[1]
    flat = rewards.reshape(-1)
    mean = torch.nanmean(flat.view(-1, k), dim=1).repeat_interleave(k, dim=0)
    std = trl_utils.nanstd(flat.view(-1, k), dim=1).repeat_interleave(k, dim=0)
    expected = ((flat - mean) / (std + 1e-4)).view(-1, k)
    assert torch.allclose(group_advantages(rewards), expected, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda k: st.lists(
            st.lists(st.floats(-100.0, 100.0), min_size=k, max_size=k), min_size=1, max_size=5
        )
    ),
    st.booleans(),
)
def test_group_advantages_sum_to_zero(rows, scale):
    adv = group_advantages(torch.tensor(rows, dtype=torch.float64), scale=scale)
    magnitude = max(1.0, max(abs(v) for row in rows for v in row))
    for row in adv.tolist():
        assert abs(sum(row)) <= 1e-6 * magnitude


def _hand_grpo(logp, old, ref, adv, mask, eps, beta):
    """Plain-Python per-sequence token-mean GRPO loss and the k3 KL mean."""
    seq_losses, kl_sum, tokens = [], 0.0, 0
    for i in range(len(logp)):
        terms = []
        for t in range(len(logp[i])):
            if not mask[i][t]:
                continue
            ratio = math.exp(logp[i][t] - old[i][t])
            clipped = min(max(ratio, 1 - eps), 1 + eps)
            surrogate = -min(ratio * adv[i], clipped * adv[i])
            d = ref[i][t] - logp[i][t]
            kl = math.exp(d) - d - 1
            terms.append(surrogate + beta * kl)
            kl_sum += kl
            tokens += 1
        seq_losses.append(sum(terms) / len(terms))
    return sum(seq_losses) / len(seq_losses), kl_sum / tokens


def test_grpo_loss_hand_values():
    logp = [[-1.0, -0.5, -2.0], [-0.2, -3.0, -9.0]]
    old = [[-1.5, -0.5, -1.0], [-0.1, -2.9, -1.0]]
    ref = [[-1.1, -0.4, -2.5], [-0.3, -2.0, -1.0]]
    adv = [1.0, -0.5]
    mask = [[1, 1, 1], [1, 1, 0]]
    expected, expected_kl = _hand_grpo(logp, old, ref, adv, mask, 0.2, 0.1)
    loss, stats = grpo_loss(
        torch.tensor(logp),
        torch.tensor(old),
        torch.tensor(ref),
        torch.tensor(adv),
        torch.tensor(mask),
        clip_eps=0.2,
        beta=0.1,
    )
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert stats["kl"] == pytest.approx(expected_kl, rel=1e-6)
    # Ratios e^0.5, 1, e^-1 (A > 0) and e^-0.1, e^-0.1 (A < 0): only e^0.5 is clipped in the
    # direction of its advantage (e^-1 < 0.8 with A > 0 takes the unclipped branch of the min).
    assert stats["clip_ratio"] == pytest.approx(1 / 5)


def test_rejects_unknown_loss_type_and_missing_reference():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="loss_type"):
        grpo_loss(x, x, None, torch.zeros(1), torch.ones(1, 2), loss_type="sapo")
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(x, x, None, torch.zeros(1), torch.ones(1, 2), beta=0.1)


def _trl_grpo_loss(logp, old, ref, advantages, mask, eps, beta, loss_type):
    """Run TRL's `GRPOTrainer._compute_loss` on a bare instance (`object.__new__`, no __init__).

    The model forward (`_get_per_token_logps_and_entropies`) is replaced by one returning `logp`;
    the other attributes are the ones `_compute_loss` reads with token-level importance sampling,
    no vLLM, no entropy mask or bonus, eval mode (so no gradient-accumulation division).
    """
    trl_grpo = pytest.importorskip("trl.trainer.grpo_trainer")
    batch, width = logp.shape
    trainer = object.__new__(trl_grpo.GRPOTrainer)
    trainer.__dict__.update(
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level="token",
        beta=beta,
        args=types.SimpleNamespace(use_bias_correction_kl=False, delta=None),
        loss_type=loss_type,
        epsilon_low=eps,
        epsilon_high=eps,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        model=types.SimpleNamespace(training=False),
        current_gradient_accumulation_steps=1,
        max_completion_length=width,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        accelerator=types.SimpleNamespace(
            gather=lambda x: x, reduce=lambda x, reduction: x, num_processes=1
        ),
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *a, **k: (logp, torch.zeros_like(logp), None),
    )
    inputs = {
        "prompt_ids": torch.zeros(batch, 2, dtype=torch.long),
        "prompt_mask": torch.ones(batch, 2, dtype=torch.long),
        "completion_ids": torch.zeros(batch, width, dtype=torch.long),
        "completion_mask": mask,
        "advantages": advantages,
        "old_per_token_logps": old,
        "ref_per_token_logps": ref,
        "num_items_in_batch": mask.sum(),
    }
    return trainer._compute_loss(None, inputs), trainer._metrics["eval"]


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_equals_trl_grpo_trainer_loss_gradient_and_metrics(loss_type, beta):
    gen = torch.Generator().manual_seed(1)
    batch, width = 4, 5
    logp = (-torch.rand(batch, width, generator=gen) * 3).requires_grad_()
    old = logp.detach() + 0.4 * torch.randn(batch, width, generator=gen)
    ref = logp.detach() + 0.3 * torch.randn(batch, width, generator=gen)
    advantages = torch.tensor([1.2, -0.7, 0.3, -1.5])
    mask = torch.tensor(
        [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0]], dtype=torch.long
    )

    trl_loss, metrics = _trl_grpo_loss(logp, old, ref, advantages, mask, 0.2, beta, loss_type)
    (trl_grad,) = torch.autograd.grad(trl_loss, logp)
    ours, stats = grpo_loss(logp, old, ref, advantages, mask, 0.2, beta, loss_type)
    (our_grad,) = torch.autograd.grad(ours, logp)

    assert ours.item() == pytest.approx(trl_loss.item(), rel=1e-6)
    assert torch.allclose(our_grad, trl_grad, atol=1e-7)
    assert stats["clip_ratio"] == pytest.approx(metrics["clip_ratio/region_mean"][0])
    assert stats["clip_ratio"] > 0  # the data exercise the clip
    if beta:
        assert stats["kl"] == pytest.approx(metrics["kl"][0], rel=1e-6)
