"""Loss algebra of the CGPO optimizers (CRPG, CODPO, CRRAFT) and of the baselines (DPO, GRPO, PPO,
Bradley-Terry), as pure functions of precomputed log-probabilities; no models inside."""

from rlguard.train.optimizers.bradley_terry import bradley_terry_loss, preference_accuracy
from rlguard.train.optimizers.codpo import codpo_loss, codpo_pairs
from rlguard.train.optimizers.crpg import crpg_loss, crpg_weights
from rlguard.train.optimizers.crraft import BASELINE, crraft_loss, crraft_select
from rlguard.train.optimizers.dpo import dpo_logits, dpo_loss, dpo_rewards
from rlguard.train.optimizers.grpo import group_advantages, grpo_loss
from rlguard.train.optimizers.ppo import (
    gae,
    ppo_policy_loss,
    ppo_value_loss,
    token_rewards,
    whiten,
)

__all__ = [
    "BASELINE",
    "bradley_terry_loss",
    "codpo_loss",
    "codpo_pairs",
    "crpg_loss",
    "crpg_weights",
    "crraft_loss",
    "crraft_select",
    "dpo_logits",
    "dpo_loss",
    "dpo_rewards",
    "gae",
    "group_advantages",
    "grpo_loss",
    "ppo_policy_loss",
    "ppo_value_loss",
    "preference_accuracy",
    "token_rewards",
    "whiten",
]
