"""CRPG weights and loss against hand computation (REFERENCE.md section 4)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.train.optimizers import crpg_loss, crpg_weights


def _weights(calibrated, passed, log_ratio, kl_max):
    return crpg_weights(
        torch.tensor(calibrated), torch.tensor(passed), torch.tensor(log_ratio), kl_max
    ).tolist()


def test_kl_factor_zero_at_and_above_kl_max_and_above_one_below_zero():
    log_ratio = [2.0, 3.0, -1.0, 0.0, 1.0]
    got = _weights([1.0] * 5, [True] * 5, log_ratio, kl_max=2.0)
    expected = [max(1.0 - lr / 2.0, 0.0) for lr in log_ratio]  # [0, 0, 1.5, 1, 0.5]
    assert got == pytest.approx(expected)
    assert got[0] == 0.0 and got[1] == 0.0
    assert got[2] > 1.0  # not capped at 1


def test_reward_is_zero_when_a_judge_fails():
    got = _weights([0.9, 0.7], [False, True], [-1.0, -1.0], kl_max=2.0)
    assert got == pytest.approx([0.0, 0.7 * 1.5])


def test_weights_carry_no_grad():
    calibrated = torch.tensor([0.3, 0.8], requires_grad=True)
    log_ratio = torch.tensor([0.1, -0.2], requires_grad=True)
    w = crpg_weights(calibrated, torch.tensor([True, True]), log_ratio, 1.0)
    assert not w.requires_grad


@pytest.mark.parametrize("kl_max", [0.0, -1.0])
def test_non_positive_kl_max_rejected(kl_max):
    with pytest.raises(ValueError, match="kl_max"):
        crpg_weights(torch.ones(1), torch.ones(1, dtype=torch.bool), torch.zeros(1), kl_max)


def test_loss_and_gradient_match_the_formula():
    logp_values = [-3.0, -1.5, -7.25]
    weights_values = [0.9, 0.0, 1.4]
    n = len(logp_values)
    mean_w = sum(weights_values) / n
    expected_loss = (
        -sum(lp * (w - mean_w) for lp, w in zip(logp_values, weights_values, strict=True)) / n
    )
    expected_grad = [-(w - mean_w) / n for w in weights_values]

    seq_logp = torch.tensor(logp_values, dtype=torch.float64, requires_grad=True)
    weights = torch.tensor(weights_values, dtype=torch.float64, requires_grad=True)
    loss = crpg_loss(seq_logp, weights)
    loss.backward()

    assert loss.item() == pytest.approx(expected_loss)
    assert seq_logp.grad.tolist() == pytest.approx(expected_grad)
    assert weights.grad is None  # weights are detached inside


def test_end_to_end_weights_then_loss():
    calibrated, passed, log_ratio = [0.6, 0.9, 0.5], [True, False, True], [0.5, 0.0, -0.5]
    kl_max = 1.0
    w = [
        max(1 - lr / kl_max, 0.0) * (c if p else 0.0)
        for c, p, lr in zip(calibrated, passed, log_ratio, strict=True)
    ]
    logp = [-2.0, -4.0, -1.0]
    mean_w = sum(w) / 3
    expected = -sum(lp * (wi - mean_w) for lp, wi in zip(logp, w, strict=True)) / 3

    weights = crpg_weights(
        torch.tensor(calibrated), torch.tensor(passed), torch.tensor(log_ratio), kl_max
    )
    assert crpg_loss(torch.tensor(logp), weights).item() == pytest.approx(expected)


def test_empty_batch_gives_a_zero_that_backpropagates():
    seq_logp = torch.zeros(0, requires_grad=True)
    loss = crpg_loss(seq_logp, torch.zeros(0))
    loss.backward()
    assert loss.item() == 0.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.0, 1.0),
            st.booleans(),
            st.floats(-20.0, 20.0),
        ),
        min_size=1,
        max_size=8,
    ),
    st.floats(0.01, 10.0),
)
def test_weights_lie_in_zero_to_one_plus_ratio_over_kl_max(rows, kl_max):
    calibrated = torch.tensor([r[0] for r in rows], dtype=torch.float64)
    passed = torch.tensor([r[1] for r in rows])
    log_ratio = torch.tensor([r[2] for r in rows], dtype=torch.float64)
    w = crpg_weights(calibrated, passed, log_ratio, kl_max)
    for wi, (_, _, lr) in zip(w.tolist(), rows, strict=True):
        assert 0.0 <= wi <= 1.0 + abs(lr) / kl_max + 1e-12
        assert math.isfinite(wi)
