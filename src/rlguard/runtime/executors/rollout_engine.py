"""`RuntimeRollout`: the trainer's rollout engine on the runtime's generation functions.

    policy = load_causal_lm(config.policy, tokenizer)
    executor = ServerlessExecutor(RuntimeConfig(policy=config.policy.path), prices, profile)
    trainer = CGPOTrainer(config, model=policy, processing_class=tokenizer,
                          rollout_engine=RuntimeRollout(policy, tokenizer, executor))

Before every `generate` the policy's current weights go to the functions through the object
store, so each step samples from the policy the last update produced. The samples' seed is drawn
from torch's global generator, which the trainer seeds per step: a resumed run samples the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlguard.runtime.executors.base import Executor
from rlguard.runtime.generation.generator import GroupRequest
from rlguard.runtime.generation.rollouts import to_rollouts
from rlguard.runtime.policies.report import StepReport
from rlguard.train.rollout import Rollouts


class RuntimeRollout:
    def __init__(
        self, policy: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, executor: Executor
    ) -> None:
        self.policy = policy
        self.tokenizer = tokenizer
        self.executor = executor
        self.reports: list[StepReport] = []  # one per generate call: time, cost, tokens

    def generate(
        self, prompts: Sequence[str], k: int, max_new_tokens: int, temperature: float
    ) -> Rollouts:
        """k completions per prompt, grouped: rows i*k .. i*k+k-1 answer prompts[i]."""
        weights = {name: t.detach().cpu() for name, t in self.policy.state_dict().items()}
        self.executor.load_weights(weights)
        seed = int(torch.randint(0, 2**62, ()))
        prompt_ids = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        groups = [
            GroupRequest(i, ids, k, max_new_tokens, temperature, seed)
            for i, ids in enumerate(prompt_ids)
        ]
        samples, report = self.executor.run_generation(groups)
        self.reports.append(report)
        return to_rollouts(samples, prompt_ids, self.tokenizer)
