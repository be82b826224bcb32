"""DPO loss against hand values and against TRL 1.16's own `DPOTrainer._compute_loss`."""

from __future__ import annotations

import math
import types
from collections import defaultdict

import pytest
import torch

from rlguard.train.optimizers import dpo_logits, dpo_loss, dpo_rewards


def test_loss_matches_hand_values():
    beta = 0.1
    c, r, rc, rr = [-5.0, -9.0], [-6.0, -7.0], [-5.5, -8.0], [-5.0, -8.5]
    expected = [math.log1p(math.exp(-beta * ((c[i] - rc[i]) - (r[i] - rr[i])))) for i in range(2)]
    got = dpo_loss(*(torch.tensor(v) for v in (c, r, rc, rr)), beta)
    assert got.shape == (2,)
    assert got.tolist() == pytest.approx(expected)


def test_gradient_and_frozen_reference():
    beta = 0.5
    chosen = torch.tensor([-2.0], requires_grad=True)
    rejected = torch.tensor([-3.0], requires_grad=True)
    ref_c = torch.tensor([-2.5], requires_grad=True)
    ref_r = torch.tensor([-2.0], requires_grad=True)
    dpo_loss(chosen, rejected, ref_c, ref_r, beta).sum().backward()
    margin = (-2.0 + 2.5) - (-3.0 + 2.0)
    sig = 1 / (1 + math.exp(-beta * margin))
    assert chosen.grad.item() == pytest.approx(-beta * (1 - sig))
    assert rejected.grad.item() == pytest.approx(beta * (1 - sig))
    assert ref_c.grad is None and ref_r.grad is None


def test_logits_and_implicit_rewards():
    t = [torch.tensor([v]) for v in (-1.0, -4.0, -2.0, -3.0)]
    assert dpo_logits(*t).item() == pytest.approx((-1 + 2) - (-4 + 3))
    rc, rr = dpo_rewards(*t, beta=0.2)
    assert rc.item() == pytest.approx(0.2 * 1.0) and rr.item() == pytest.approx(0.2 * -1.0)


def _trl_dpo_loss(per_token_logps, ref_chosen, ref_rejected, beta):
    """Run TRL's `DPOTrainer._compute_loss` on a bare instance (`object.__new__`, no __init__).

    The attributes set are the ones `_compute_loss` reads for loss_type "sigmoid" with
    precomputed reference log-probs in eval mode; the fake model returns the given per-token
    log-probs in place of the fused LM head's `log_probs`.
    """
    trl_dpo = pytest.importorskip("trl.trainer.dpo_trainer")
    rows, width = per_token_logps.shape

    class FakeModel(torch.nn.Module):
        def forward(self, **kwargs):
            zeros = torch.zeros(rows, width)
            return types.SimpleNamespace(
                log_probs=per_token_logps,
                entropy=zeros,
                mean_logits=zeros,
                is_top1=zeros.bool(),
            )

    model = FakeModel().eval()
    trainer = object.__new__(trl_dpo.DPOTrainer)
    trainer.__dict__.update(
        model=model,
        accelerator=types.SimpleNamespace(
            device="cpu", gather=lambda x: x, gather_for_metrics=lambda x: x
        ),
        aux_loss_enabled=False,
        ld_alpha=None,
        precompute_ref_logps=True,
        f_divergence_type="reverse_kl",
        loss_types=["sigmoid"],
        loss_weights=[1.0],
        use_weighting=False,
        beta=beta,
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        _total_train_tokens=0,
    )
    inputs = {
        "input_ids": torch.zeros(rows, width + 1, dtype=torch.long),
        "attention_mask": torch.ones(rows, width + 1, dtype=torch.long),
        "completion_mask": torch.ones(rows, width + 1, dtype=torch.long),
        "ref_chosen_logps": ref_chosen,
        "ref_rejected_logps": ref_rejected,
    }
    return trainer._compute_loss(model, inputs, return_outputs=False), trainer._metrics["eval"]


@pytest.mark.parametrize("beta", [0.1, 1.0])
def test_equals_trl_dpo_trainer_loss_and_gradient(beta):
    gen = torch.Generator().manual_seed(0)
    n, width = 4, 6
    per_token = (-torch.rand(2 * n, width, generator=gen) * 3).requires_grad_()
    ref_chosen = -torch.rand(n, generator=gen) * 15
    ref_rejected = -torch.rand(n, generator=gen) * 15

    trl_loss, metrics = _trl_dpo_loss(per_token, ref_chosen, ref_rejected, beta)
    (trl_grad,) = torch.autograd.grad(trl_loss, per_token)

    chosen, rejected = per_token.sum(dim=1).chunk(2)
    ours = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta).mean()
    (our_grad,) = torch.autograd.grad(ours, per_token)

    assert ours.item() == pytest.approx(trl_loss.item(), rel=1e-6)
    assert torch.allclose(our_grad, trl_grad, atol=1e-7)
    r_chosen, r_rejected = dpo_rewards(chosen, rejected, ref_chosen, ref_rejected, beta)
    assert r_chosen.mean().item() == pytest.approx(metrics["rewards/chosen"][0], rel=1e-6)
    assert r_rejected.mean().item() == pytest.approx(metrics["rewards/rejected"][0], rel=1e-6)
