"""The simulated setups: the RLHFless paper's 16-GPU testbed and its 20-node large scale.

The paper's testbed (REFERENCE.md s5): 16 L40S GPUs, Qwen2.5-7B, GRPO, GSM8K, prompts <= 1024 and
responses <= 2048 tokens. Batch shape from verl's GSM8K GRPO example (1024 prompts x 5 samples).
The paper does not say which model its 20-node simulation ran; we take the same L40S nodes
(20 x 8 = 160 GPUs) with a larger model, Qwen2.5-32B at tensor parallel 4 (40 actors), and keep
each actor's share of the batch equal to the testbed's (2560 prompts x 5 = 320 samples per actor).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rlguard.errors import InputError
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.workload import LengthModel, TokenBatch


class Setup(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    n_gpus: int = Field(gt=0)
    profile: str
    algorithm: Literal["grpo", "ppo"] = "grpo"
    reference_model: bool = Field(
        True, description="a reference model scores for the KL (off: KL-free GRPO, DAPO)"
    )
    remove_padding: bool = Field(
        True,
        description="the policy's and reference's passes skip padding (verl's "
        "use_remove_padding); off: every sample runs at max prompt + max response tokens",
    )
    critic_remove_padding: bool = Field(
        True, description="the same for PPO's critic (verl's critic leaves it off by default)"
    )
    prompts_per_step: int = Field(gt=0)
    k: int = Field(5, gt=0, description="samples per prompt (GRPO group size)")
    workload: LengthModel = LengthModel()
    tau: float = Field(0.9, gt=0, le=1, description="cut-and-migrate threshold")
    lam: float = Field(0.5, ge=0, le=1, description="latency weight of actor scaling")
    alpha: float = Field(0.5, gt=0, le=1, description="EWMA weight of the newest observation")
    warmup_epochs: int = Field(2, ge=1, description="epochs the length predictor has seen")
    measure_steps: int = Field(3, ge=1, description="steps simulated and averaged per seed")

    @property
    def critic(self) -> bool:
        """PPO trains a critic, which scores (values) and updates once a step."""
        return self.algorithm == "ppo"

    def scoring_passes(self) -> int:
        """Forward passes over every token before training (verl): the policy's old log-probs,
        the reference model's (for the KL), and PPO's critic values."""
        return 1 + self.reference_model + self.critic

    def training_passes(self) -> int:
        """Updates per step: the policy, and PPO's critic."""
        return 1 + self.critic

    def pass_tokens(self, batch: TokenBatch, training: bool) -> np.ndarray:
        """(groups,) tokens the phase's passes compute on, summed over its passes: a model
        without remove-padding runs each sample at the batch's full width (max prompt plus max
        response), PPO's critic being one pass of each phase."""
        passes = self.training_passes() if training else self.scoring_passes()
        critic = int(self.critic)
        real = batch.group_tokens()
        width = self.workload.max_prompt + self.workload.max_response
        padded = np.full_like(real, batch.k * width)
        policy = real if self.remove_padding else padded
        value = real if self.critic_remove_padding else padded
        return (passes - critic) * policy + critic * value


SETUPS = {
    "paper-testbed": Setup(
        name="paper-testbed", n_gpus=16, profile="qwen2.5-7b-l40s", prompts_per_step=1024
    ),
    "paper-large": Setup(
        name="paper-large", n_gpus=160, profile="qwen2.5-32b-l40s", prompts_per_step=2560
    ),
}

# What RLHFless reports against verl for each setup (REFERENCE.md s5): (speedup, GPU-s cost cut).
PAPER_RESULTS = {"paper-testbed": (1.35, 0.448), "paper-large": (1.23, 0.387)}


def check_fits(setup: Setup, profile: TimeProfile, where: str | None = None) -> None:
    """A profile the setup can run on: its GPUs make whole actors, and each actor's KV cache holds
    one sequence of the longest prompt and response (vLLM refuses to start otherwise). `where`
    names the profile's file in the error (default: its name)."""
    where = where or f"profile {profile.name}"
    if setup.n_gpus % profile.gpus_per_actor:
        raise InputError(
            f"{setup.n_gpus} GPUs (--gpus) do not make whole actors of {profile.gpus_per_actor} "
            f"GPUs ({where})"
        )
    longest = setup.workload.max_prompt + setup.workload.max_response
    capacity = profile.kv_capacity_tokens
    if capacity is not None and capacity < longest:
        raise InputError(
            f"{where}: field 'kv_capacity_tokens': cannot hold one sequence of {longest} tokens, "
            f"the longest prompt and response of setup {setup.name} (got {capacity})"
        )
