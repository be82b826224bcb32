"""verl's remove-padding switches: a model that keeps padding computes on every sample at the
batch's full width (max prompt + max response), its micro-batch overhead stays on the real tokens,
and PPO's critic can keep padding while the policy drops it (verl's defaults)."""

from __future__ import annotations

import dataclasses

import pytest
from sim_helpers import batch, profile

from rlguard.runtime.sim.phases import scoring_s, training_s
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.workload import LengthModel

WIDTH = 30 + 100  # max prompt + max response
STEP = batch([[20, 40], [60, 80]], prompt=10)  # 2 groups of 2: 240 real tokens
REAL, PADDED = 240, 4 * WIDTH
PROFILE = dataclasses.replace(profile(), score_micro_s_per_token=1e-5, train_micro_s_per_token=3e-5)


def setup(**switches: bool) -> Setup:
    workload = LengthModel(dataset_prompts=2, max_prompt=30, max_response=100)
    return Setup(
        name="t", n_gpus=2, profile="test", prompts_per_step=2, k=2, workload=workload, **switches
    )


def test_unpadded_passes_compute_on_the_real_tokens() -> None:
    ppo = setup(algorithm="ppo")  # policy, reference and critic score; policy and critic train
    assert scoring_s(STEP, PROFILE, ppo) == pytest.approx(3 * REAL * (1e-4 + 1e-5) / 2)
    assert training_s(STEP, PROFILE, ppo) == pytest.approx(2 * REAL * (4e-4 + 3e-5) / 2)


def test_a_padded_critic_computes_one_pass_of_each_phase_at_full_width() -> None:
    ppo = setup(algorithm="ppo", critic_remove_padding=False)
    score = (2 * REAL + PADDED) * 1e-4 + 3 * REAL * 1e-5
    train = (REAL + PADDED) * 4e-4 + 2 * REAL * 3e-5
    assert scoring_s(STEP, PROFILE, ppo) == pytest.approx(score / 2)
    assert training_s(STEP, PROFILE, ppo) == pytest.approx(train / 2)


def test_a_padded_policy_pads_its_own_and_the_references_passes_only() -> None:
    grpo = setup(remove_padding=False, critic_remove_padding=False)  # GRPO: no critic
    assert scoring_s(STEP, PROFILE, grpo) == pytest.approx(2 * (PADDED * 1e-4 + REAL * 1e-5) / 2)
    assert training_s(STEP, PROFILE, grpo) == pytest.approx((PADDED * 4e-4 + REAL * 3e-5) / 2)
