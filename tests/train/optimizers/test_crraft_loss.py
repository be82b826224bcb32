"""CRRAFT selection and loss against hand computation (REFERENCE.md section 4)."""

from __future__ import annotations

import pytest
import torch

from rlguard.train.optimizers import BASELINE, crraft_loss, crraft_select


def _select(rewards, passed, log_ratio, kl_max, baseline_passed):
    return crraft_select(
        torch.tensor(rewards),
        torch.tensor(passed),
        torch.tensor(log_ratio),
        kl_max,
        torch.tensor(baseline_passed),
    )


def test_keeps_highest_reward_among_passing_samples():
    picks = _select([[0.1, 0.9, 0.5]], [[True, False, True]], [[0.0, 0.0, 0.0]], 1.0, [True])
    assert picks == [2]


def test_negative_rewards_rank_correctly():
    picks = _select([[-3.0, -1.0, 2.0]], [[True, True, False]], [[0.0] * 3], 1.0, [True])
    assert picks == [1]


def test_kl_filter_drops_samples_above_kl_max_and_keeps_equal():
    picks = _select([[0.9, 0.5, 0.1]], [[True] * 3], [[2.0, 1.0, 0.5]], 1.0, [True])
    assert picks == [1]


def test_fallback_to_passing_baseline_else_skip():
    rewards = [[0.9, 0.5], [0.9, 0.5]]
    passed = [[False, True], [False, True]]
    log_ratio = [[0.0, 5.0], [0.0, 5.0]]  # the passing sample is filtered by KL
    assert _select(rewards, passed, log_ratio, 1.0, [True, False]) == [BASELINE, None]
    assert BASELINE == -1


def test_batch_of_prompts():
    picks = _select(
        [[0.2, 0.4], [0.3, 0.1], [0.5, 0.6]],
        [[True, True], [False, False], [True, True]],
        [[0.0, 0.0], [0.0, 0.0], [0.0, 3.0]],
        1.0,
        [False, False, False],
    )
    assert picks == [1, None, 0]


def test_loss_and_gradient_match_hand_values():
    logp = [-4.0, -2.5]
    calibrated = [0.7, 0.5]
    expected = sum(-c * lp for c, lp in zip(calibrated, logp, strict=True)) / 2
    seq_logp = torch.tensor(logp, requires_grad=True)
    cal = torch.tensor(calibrated, requires_grad=True)
    loss = crraft_loss(seq_logp, cal)
    loss.backward()
    assert loss.item() == pytest.approx(expected)
    assert seq_logp.grad.tolist() == pytest.approx([-c / 2 for c in calibrated])
    assert cal.grad is None


def test_no_selection_gives_a_zero_that_backpropagates():
    seq_logp = torch.zeros(0, requires_grad=True)
    loss = crraft_loss(seq_logp, torch.zeros(0))
    assert loss.item() == 0.0
    loss.backward()
    assert loss.grad_fn is not None
