"""A CGPO world whose samples are known in advance: fixed answers, a length reward, a tiny Llama.
Trainer tests build on it (one step, micro-batches, precision, devices, data parallel)."""

from __future__ import annotations

import json
import zlib

import torch
from torch.distributed.tensor import DTensor, distribute_tensor

from rlguard.train.config import CGPOConfig
from rlguard.train.rollout import encode_completions
from rlguard.train.trainer import CGPOTrainer
from tiny_models import tiny_causal_lm, tiny_tokenizer

ANSWERS = ["The final answer is 5.", "The final answer is 4.", "five", "The final answer is 5"]


class FixedRollout:
    """Always answers with ANSWERS (cycled), so a step's samples are known in advance."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def generate(self, prompts, k, max_new_tokens, temperature):
        repeated = [p for p in prompts for _ in range(k)]
        completions = [ANSWERS[i % len(ANSWERS)] for i in range(len(repeated))]
        rollouts = encode_completions(self.tokenizer, repeated, completions)
        rollouts.prompt_index = [i for i in range(len(prompts)) for _ in range(k)]
        return rollouts


class PromptRollout(FixedRollout):
    """Answers that depend only on the prompt and the sample's index among its K (not on where
    the prompt sits in a batch), so a batch split over processes gets the same answers."""

    def generate(self, prompts, k, max_new_tokens, temperature):
        repeated = [p for p in prompts for _ in range(k)]
        completions = [
            ANSWERS[(zlib.crc32(p.encode()) + j) % len(ANSWERS)] for p in prompts for j in range(k)
        ]
        rollouts = encode_completions(self.tokenizer, repeated, completions)
        rollouts.prompt_index = [i for i in range(len(prompts)) for _ in range(k)]
        return rollouts


def length_reward(prompts, completions):
    return [len(c) / 10 for c in completions]


ROWS = [
    {"prompt": "What is 2 + 3? ", "metadata": {"answer": "5"}, "reference": "It is 5."},
    {"prompt": "What is 1 + 4? ", "metadata": {"answer": "5"}, "reference": "Five."},
]
MIXED_ROWS = [
    *ROWS,
    # no answer passes: CRRAFT falls back to a_bar, which passes; CODPO skips the prompt
    {
        "prompt": "What is 3 + 4? ",
        "metadata": {"answer": "7"},
        "reference": "The final answer is 7.",
    },
    # no answer passes and neither does a_bar: CRRAFT skips the prompt too
    {"prompt": "What is 4 + 4? ", "metadata": {"answer": "8"}, "reference": "Eight."},
    {"prompt": "What is 0 + 5? ", "metadata": {"answer": "5"}, "reference": "5"},
    {"prompt": "What is 5 + 0? ", "metadata": {"answer": "5"}, "reference": "The answer is 5."},
]


def write_world(tmp_path, rows=ROWS):
    """Two tasks' prompt files (the same `rows`) and the tokenizer."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path, tiny_tokenizer()


def make_trainer(
    world,
    optimizers=("crpg", "crpg"),
    weights=(0.7, 0.3),
    loop=None,
    rollout=FixedRollout,
    **task,
):
    root, tokenizer = world
    tasks = [
        {
            "name": name,
            "prompts": str(root / f"{name}.jsonl"),
            "reward": {"function": "unused:unused"},
            "judges": ["math"],
            "optimizer": optimizer,
            "weight": weight,
            "k": 4,
            "batch_size": 2,
            **task,
        }
        for name, optimizer, weight in zip(("a", "b"), optimizers, weights, strict=True)
    ]
    config = CGPOConfig(
        output_dir=str(root / "out"),
        policy={"config": {"model_type": "llama"}, "tokenizer": "unused"},
        tasks=tasks,
        **{"max_grad_norm": 1e9, "learning_rate": 1e-3, "tensorboard": False, **(loop or {})},
    )
    model = tiny_causal_lm(tokenizer)
    return CGPOTrainer(
        config,
        model=model,
        processing_class=tokenizer,
        reward_funcs={"a": length_reward, "b": length_reward},
        rollout_engine=rollout(tokenizer),
        progress=False,
    )


def away_from_reference(trainer):
    """Move the policy off its reference (the same noise every time), so KL terms, KL filters
    and clipping bind from the first step."""
    noise = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in trainer.models.policy.parameters():
            step = 0.05 * torch.randn(p.shape, generator=noise)
            if isinstance(p, DTensor):  # sharded (FSDP): each process adds to its shard
                step = distribute_tensor(step, p.device_mesh, p.placements)
            p.add_(step)
    return trainer
