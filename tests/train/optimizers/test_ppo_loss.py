"""PPO pieces against hand values and against the old TRL `PPOTrainer` formulas.

TRL 1.16 no longer ships PPO, so the TRL side is reproduced line by line from
huggingface/trl trl/trainer/ppo_trainer.py at commit be8a08742d7f ("4. compute rewards",
"6. compute advantages and returns", the pg_loss / vf_loss block of the PPO epoch loop) and from
trl/core.py `masked_mean`, `masked_var`, `masked_whiten` (TRL 0.x).
"""

from __future__ import annotations

import math

import pytest
import torch

from rlguard.train.optimizers import gae, ppo_policy_loss, ppo_value_loss, token_rewards, whiten

MASK = [[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 0]]


def _random(seed, shape=(3, 4), scale=1.0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


def test_token_rewards_hand_values():
    scores, kl_coef = [2.0, -1.0], 0.1
    logp = [[-1.0, -2.0, -3.0], [-0.5, -0.5, -0.5]]
    ref = [[-1.5, -2.0, -2.0], [-1.0, -1.0, -1.0]]
    mask = [[1, 1, 0], [1, 1, 1]]
    expected = []
    for i in range(2):
        row = [-kl_coef * (logp[i][t] - ref[i][t]) if mask[i][t] else 0.0 for t in range(3)]
        row[sum(mask[i]) - 1] += scores[i]
        expected.append(row)
    got = token_rewards(
        torch.tensor(scores), torch.tensor(logp), torch.tensor(ref), torch.tensor(mask), kl_coef
    )
    assert got.tolist() == [pytest.approx(row) for row in expected]


def test_token_rewards_skip_rows_without_tokens():
    got = token_rewards(
        torch.tensor([5.0]), torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3), 0.1
    )
    assert got.abs().sum().item() == 0.0


def _hand_gae(rewards, values, length, gamma, lam):
    """A_t = sum_l (gamma lam)^l delta_{t+l}, delta_t = r_t + gamma V_{t+1} - V_t, V_length = 0."""
    v = [*values[:length], 0.0]
    deltas = [rewards[t] + gamma * v[t + 1] - v[t] for t in range(length)]
    adv = [
        sum((gamma * lam) ** k * deltas[t + k] for k in range(length - t)) for t in range(length)
    ]
    return adv, [a + v[t] for t, a in enumerate(adv)]


def test_gae_hand_values():
    gamma, lam = 0.9, 0.8
    rewards, values = _random(0).tolist(), _random(1).tolist()
    adv, ret = gae(torch.tensor(rewards), torch.tensor(values), torch.tensor(MASK), gamma, lam)
    for i, row in enumerate(MASK):
        length = sum(row)
        hand_adv, hand_ret = _hand_gae(rewards[i], values[i], length, gamma, lam)
        pad = [0.0] * (len(row) - length)
        assert adv[i].tolist() == pytest.approx(hand_adv + pad, abs=1e-6)
        assert ret[i].tolist() == pytest.approx(hand_ret + pad, abs=1e-6)


def _trl_masked_mean(values, mask):
    return (values * mask).sum() / mask.sum()


def _trl_masked_whiten(values, mask, shift_mean=True):
    mean = _trl_masked_mean(values, mask)
    variance = _trl_masked_mean((values - mean) ** 2, mask)
    mask_sum = mask.sum()
    variance = variance * (mask_sum / (mask_sum - 1))
    whitened = (values - mean) * torch.rsqrt(variance + 1e-8)
    if not shift_mean:
        whitened += mean
    return whitened


def test_gae_and_whiten_equal_trl_loop():
    gamma, lam = 1.0, 0.95
    mask = torch.tensor(MASK).bool()
    padding_mask = ~mask
    rewards = torch.masked_fill(_random(2), padding_mask, 0)
    values = torch.masked_fill(_random(3), padding_mask, 0)

    lastgaelam = 0
    advantages_reversed = []
    gen_length = rewards.shape[1]
    for t in reversed(range(gen_length)):
        nextvalues = values[:, t + 1] if t < gen_length - 1 else 0.0
        delta = rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam = delta + gamma * lam * lastgaelam
        advantages_reversed.append(lastgaelam)
    trl_adv = torch.stack(advantages_reversed[::-1], axis=1)
    trl_returns = trl_adv + values
    trl_white = torch.masked_fill(_trl_masked_whiten(trl_adv, mask), padding_mask, 0)

    adv, returns = gae(rewards, values, mask, gamma, lam)
    assert torch.allclose(adv, trl_adv.masked_fill(padding_mask, 0), atol=1e-6)
    assert torch.allclose(returns, trl_returns.masked_fill(padding_mask, 0), atol=1e-6)
    assert torch.allclose(whiten(adv, mask), trl_white, atol=1e-5)
    trl_scaled = _trl_masked_whiten(rewards, mask, shift_mean=False).masked_fill(padding_mask, 0)
    assert torch.allclose(whiten(rewards, mask, shift_mean=False), trl_scaled, atol=1e-5)


def test_whiten_hand_values():
    x = [[1.0, 2.0, 0.0], [3.0, 4.0, 5.0]]
    mask = [[1, 1, 0], [1, 1, 1]]
    std = math.sqrt(((1 - 3) ** 2 + 1 + 0 + 1 + (5 - 3) ** 2) / 4 + 1e-8)
    expected = [
        [(v - 3) / std if m else 0.0 for v, m in zip(xr, mr, strict=True)]
        for xr, mr in zip(x, mask, strict=True)
    ]
    got = whiten(torch.tensor(x, dtype=torch.float64), torch.tensor(mask))
    assert got.tolist() == [pytest.approx(row) for row in expected]


def test_policy_loss_hand_values():
    logp = [[-1.0, -0.5], [-2.0, -0.1]]
    old = [[-1.5, -0.5], [-1.0, -0.3]]
    adv = [[1.0, 2.0], [-1.0, 0.5]]
    mask = [[1, 1], [1, 0]]
    eps = 0.2
    terms, clipped_count = [], 0
    for i in range(2):
        for t in range(2):
            if mask[i][t]:
                ratio = math.exp(logp[i][t] - old[i][t])
                unclipped = -adv[i][t] * ratio
                clipped = -adv[i][t] * min(max(ratio, 1 - eps), 1 + eps)
                terms.append(max(unclipped, clipped))
                clipped_count += clipped > unclipped
    loss, clipfrac = ppo_policy_loss(
        torch.tensor(logp), torch.tensor(old), torch.tensor(adv), torch.tensor(mask), eps
    )
    assert loss.item() == pytest.approx(sum(terms) / len(terms))
    assert clipfrac == pytest.approx(clipped_count / len(terms))


def test_value_loss_hand_values():
    values = [[1.0, 2.0, 9.0]]
    old = [[0.5, 2.5, 0.0]]
    returns = [[2.0, 1.0, 0.0]]
    mask = [[1, 1, 0]]
    clip = 0.2
    terms = []
    for t in range(2):
        v, o, r = values[0][t], old[0][t], returns[0][t]
        vc = min(max(v, o - clip), o + clip)
        terms.append(max((v - r) ** 2, (vc - r) ** 2))
    loss = ppo_value_loss(
        torch.tensor(values), torch.tensor(old), torch.tensor(returns), torch.tensor(mask), clip
    )
    assert loss.item() == pytest.approx(0.5 * sum(terms) / 2)  # 0.5 * 1.69


def test_policy_and_value_losses_equal_trl_lines_with_gradients():
    mask = torch.tensor(MASK).bool()
    padding_mask = ~mask
    cliprange, cliprange_value = 0.2, 0.2
    new_logprobs = (-torch.rand(3, 4, generator=torch.Generator().manual_seed(4))).requires_grad_()
    mb_logprobs = new_logprobs.detach() + 0.3 * _random(5)
    mb_advantage = _random(6)
    vpred = _random(7).requires_grad_()
    mb_values = vpred.detach() + 0.3 * _random(8)
    mb_return = _random(9)

    logprobs_diff = new_logprobs - mb_logprobs
    ratio = torch.exp(logprobs_diff)
    pg_losses = -mb_advantage * ratio
    pg_losses2 = -mb_advantage * torch.clamp(ratio, 1.0 - cliprange, 1.0 + cliprange)
    pg_loss_max = torch.max(pg_losses, pg_losses2)
    pg_loss = _trl_masked_mean(pg_loss_max, ~padding_mask)
    pg_clipfrac = _trl_masked_mean((pg_losses2 > pg_losses).float(), ~padding_mask)
    vpredclipped = torch.clamp(vpred, mb_values - cliprange_value, mb_values + cliprange_value)
    vf_losses1 = torch.square(vpred - mb_return)
    vf_losses2 = torch.square(vpredclipped - mb_return)
    vf_loss_max = torch.max(vf_losses1, vf_losses2)
    vf_loss = 0.5 * _trl_masked_mean(vf_loss_max, ~padding_mask)
    trl_grads = torch.autograd.grad(pg_loss + vf_loss, (new_logprobs, vpred))

    loss, clipfrac = ppo_policy_loss(new_logprobs, mb_logprobs, mb_advantage, mask, cliprange)
    value_loss = ppo_value_loss(vpred, mb_values, mb_return, mask, cliprange_value)
    grads = torch.autograd.grad(loss + value_loss, (new_logprobs, vpred))

    assert loss.item() == pytest.approx(pg_loss.item(), rel=1e-6)
    assert clipfrac == pytest.approx(pg_clipfrac.item())
    assert 0 < clipfrac < 1
    assert value_loss.item() == pytest.approx(vf_loss.item(), rel=1e-6)
    for ours, theirs in zip(grads, trl_grads, strict=True):
        assert torch.allclose(ours, theirs, atol=1e-7)
