"""CRRAFT (CGPO, arXiv 2409.20370): reward-ranked fine-tuning restricted to judge-passing samples.

Per prompt, samples that fail a judge or whose sequence log-ratio exceeds KL_max are dropped and the
highest-reward survivor is kept; with no survivor the baseline response a_bar is used if it passes
the judges (its calibrated reward is 0.5 by construction), otherwise the prompt is skipped.
"""

from __future__ import annotations

from torch import Tensor

BASELINE = -1
"""Selection value meaning: train on the prompt's baseline response a_bar."""


def crraft_select(
    rewards: Tensor,
    passed: Tensor,
    log_ratio: Tensor,
    kl_max: float,
    baseline_passed: Tensor,
) -> list[int | None]:
    """Per prompt, a sample index in [0, K), `BASELINE`, or None (skip).

    rewards, passed (bool), log_ratio: [P, K]; baseline_passed: [P] bool. A log-ratio equal to
    kl_max is kept. Dropped samples are masked with -inf, so negative rewards rank correctly.
    """
    eligible = passed.bool() & (log_ratio <= kl_max)
    best = rewards.masked_fill(~eligible, float("-inf")).argmax(dim=1)
    picks: list[int | None] = []
    for p in range(rewards.shape[0]):
        if eligible[p].any():
            picks.append(int(best[p]))
        else:
            picks.append(BASELINE if bool(baseline_passed[p]) else None)
    return picks


def crraft_loss(seq_logp: Tensor, calibrated: Tensor) -> Tensor:
    """Scalar mean over the M selected responses of -R_calib * seq_logp ([M] each).

    calibrated is detached (a weight, not a target). M == 0 returns a zero still attached to the
    graph, so a trainer can call backward() unconditionally.
    """
    if seq_logp.numel() == 0:
        return seq_logp.sum() * 0.0
    return (-calibrated.detach() * seq_logp).mean()
