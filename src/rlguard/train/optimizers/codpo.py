"""CODPO (CGPO, arXiv 2409.20370): DPO on constraint-aware pairs plus a chosen-likelihood term.

A response is positive when every judge of its task passes. Pairs are picked by masking rewards
with -inf/+inf rather than multiplying by a 0/1 mask: with mixed-sign rewards a zeroed failing
response would outrank a passing one whose reward is negative.
"""

from __future__ import annotations

from torch import Tensor

from rlguard.train.optimizers.dpo import dpo_loss


def codpo_pairs(rewards: Tensor, passed: Tensor) -> list[tuple[int, int] | None]:
    """Per prompt, (chosen, rejected) sample indices into K, or None to skip the prompt.

    rewards: [P, K] reward-model scores; passed: [P, K] bool, all judges pass.
    chosen = highest reward among positives; rejected = lowest reward among negatives, or, when
    every sample is positive, the lowest-reward sample other than the chosen one. No positives,
    or K == 1, gives None.
    """
    passed = passed.bool()
    chosen = rewards.masked_fill(~passed, float("-inf")).argmax(dim=1)
    rejected = rewards.masked_fill(passed, float("inf")).argmin(dim=1)
    pairs: list[tuple[int, int] | None] = []
    for p in range(rewards.shape[0]):
        if not passed[p].any() or rewards.shape[1] == 1:
            pairs.append(None)
            continue
        c = int(chosen[p])
        if passed[p].all():
            others = rewards[p].clone()
            others[c] = float("inf")
            pairs.append((c, int(others.argmin())))
        else:
            pairs.append((c, int(rejected[p])))
    return pairs


def codpo_loss(
    chosen_logp: Tensor,
    rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    chosen_lengths: Tensor,
    beta: float,
    lam: float,
) -> Tensor:
    """Scalar mean over N pairs of -[log sigmoid(beta * margin) + lam / |a_chosen| * chosen_logp].

    All inputs [N]; chosen_lengths = number of completion tokens of each chosen response (clamped
    to >= 1). The length-normalised likelihood term keeps DPO from lowering both log-probs at once.
    """
    dpo = dpo_loss(chosen_logp, rejected_logp, ref_chosen_logp, ref_rejected_logp, beta)
    lengths = chosen_lengths.to(chosen_logp.dtype).clamp(min=1.0)
    return (dpo - lam * chosen_logp / lengths).mean()
