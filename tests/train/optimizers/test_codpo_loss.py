"""CODPO pair selection and loss against hand computation (REFERENCE.md section 4)."""

from __future__ import annotations

import math

import pytest
import torch

from rlguard.train.optimizers import codpo_loss, codpo_pairs, dpo_loss


def _pairs(rewards, passed):
    return codpo_pairs(torch.tensor(rewards), torch.tensor(passed))


def test_all_negative_rewards():
    assert _pairs([[-3.0, -1.0, -2.0, -5.0]], [[True, True, False, False]]) == [(1, 3)]


def test_mixed_signs_where_a_zero_one_mask_picks_wrongly():
    rewards = torch.tensor([[-1.0, -2.0, 3.0, 2.0]])
    passed = torch.tensor([[True, True, False, False]])
    # The wrong way: multiplying by the mask turns failing rewards into 0 > -1.
    naive_chosen = int((rewards * passed).argmax())
    naive_rejected = int((rewards * ~passed).argmin())
    assert not passed[0, naive_chosen]  # would train towards a judge-failing response
    assert passed[0, naive_rejected]  # and away from a passing one
    assert codpo_pairs(rewards, passed) == [(0, 3)]


def test_no_positives_skips_the_prompt():
    assert _pairs([[0.5, 0.9]], [[False, False]]) == [None]


def test_no_negatives_falls_back_to_lowest_reward_other_than_chosen():
    assert _pairs([[0.2, 0.9, 0.5]], [[True, True, True]]) == [(1, 0)]
    assert _pairs([[1.0, 1.0]], [[True, True]]) == [
        (0, 1)
    ]  # a tie never pairs a response with itself


def test_k_equal_one_skips():
    assert _pairs([[0.7], [0.2]], [[True], [False]]) == [None, None]


def test_several_prompts_in_one_call():
    rewards = [[0.1, -0.4, 0.3], [0.0, 0.0, 0.0], [2.0, -1.0, 1.0]]
    passed = [[False, True, True], [False, False, False], [True, True, True]]
    assert _pairs(rewards, passed) == [(2, 0), None, (0, 1)]


def test_loss_matches_hand_values_and_gradient():
    beta, lam = 0.1, 0.5
    c, r, rc, rr = [-5.0, -8.0], [-6.0, -7.5], [-5.5, -7.0], [-5.0, -8.0]
    lengths = [4, 10]

    def term(i):
        margin = (c[i] - rc[i]) - (r[i] - rr[i])
        return -(math.log(1 / (1 + math.exp(-beta * margin))) + lam / lengths[i] * c[i])

    expected = (term(0) + term(1)) / 2

    def grad_chosen(i):
        margin = (c[i] - rc[i]) - (r[i] - rr[i])
        sig = 1 / (1 + math.exp(-beta * margin))
        return -(beta * (1 - sig) + lam / lengths[i]) / 2

    chosen = torch.tensor(c, dtype=torch.float64, requires_grad=True)
    loss = codpo_loss(
        chosen,
        torch.tensor(r, dtype=torch.float64),
        torch.tensor(rc, dtype=torch.float64),
        torch.tensor(rr, dtype=torch.float64),
        torch.tensor(lengths),
        beta,
        lam,
    )
    loss.backward()
    assert loss.item() == pytest.approx(expected)
    assert chosen.grad.tolist() == pytest.approx([grad_chosen(0), grad_chosen(1)])


def test_lambda_zero_is_dpo():
    t = [torch.randn(3, generator=torch.Generator().manual_seed(s)) for s in range(4)]
    lengths = torch.tensor([3, 1, 2])
    assert torch.allclose(codpo_loss(*t, lengths, 0.2, 0.0), dpo_loss(*t, 0.2).mean())
