"""Rollout engines: prompts in, completions (token ids and text) out.

The optimizers only see `Rollouts`, so local `generate`, the serverless runtime or a vLLM server
can produce them without any change to the losses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlguard.train.devices import to_device


@dataclass
class Rollouts:
    """N completions, each tied to its prompt. Prompts are left-padded, completions right-padded;
    a completion's mask covers its tokens up to and including its first EOS."""

    prompt_ids: torch.Tensor  # [N, P]
    prompt_mask: torch.Tensor  # [N, P]
    completion_ids: torch.Tensor  # [N, C]
    completion_mask: torch.Tensor  # [N, C] float
    texts: list[str]
    prompt_index: list[int]  # which input prompt each completion answers

    def __len__(self) -> int:
        return len(self.texts)

    def select(self, rows: Sequence[int]) -> Rollouts:
        idx = torch.as_tensor(list(rows), dtype=torch.long, device=self.prompt_ids.device)
        return Rollouts(
            self.prompt_ids[idx],
            self.prompt_mask[idx],
            self.completion_ids[idx],
            self.completion_mask[idx],
            [self.texts[i] for i in rows],
            [self.prompt_index[i] for i in rows],
        )

    def take(self, rows: slice) -> Rollouts:
        """Consecutive rows (a micro-batch), as views: nothing is copied."""
        return Rollouts(
            self.prompt_ids[rows],
            self.prompt_mask[rows],
            self.completion_ids[rows],
            self.completion_mask[rows],
            self.texts[rows],
            self.prompt_index[rows],
        )

    def to(self, device: torch.device) -> Rollouts:
        return to_device(self, device)

    @staticmethod
    def concat(parts: Sequence[Rollouts]) -> Rollouts:
        """Rows of several rollouts in one, prompts padded on the left and completions on the
        right (masked, so positions and log-probs do not change)."""
        prompt_len = max(p.prompt_ids.shape[1] for p in parts)
        completion_len = max(p.completion_ids.shape[1] for p in parts)

        def pad(tensors: list[torch.Tensor], width: int, left: bool) -> torch.Tensor:
            return torch.cat(
                [
                    F.pad(t, (width - t.shape[1], 0) if left else (0, width - t.shape[1]))
                    for t in tensors
                ]
            )

        return Rollouts(
            pad([p.prompt_ids for p in parts], prompt_len, left=True),
            pad([p.prompt_mask for p in parts], prompt_len, left=True),
            pad([p.completion_ids for p in parts], completion_len, left=False),
            pad([p.completion_mask for p in parts], completion_len, left=False),
            [t for p in parts for t in p.texts],
            [i for p in parts for i in p.prompt_index],
        )

    @property
    def lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(dim=1)


class RolloutEngine(Protocol):
    def generate(
        self, prompts: Sequence[str], k: int, max_new_tokens: int, temperature: float
    ) -> Rollouts:
        """k completions per prompt, grouped: rows i*k .. i*k+k-1 answer prompts[i]."""
        ...


def completion_mask(completion_ids: torch.Tensor, eos_token_id: int) -> torch.Tensor:
    """1 for tokens up to and including the first EOS, 0 after it."""
    is_eos = completion_ids == eos_token_id
    after_eos = (is_eos.cumsum(dim=1) - is_eos.long()) > 0
    return (~after_eos).float()


def encode_completions(
    tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str], completions: Sequence[str]
) -> Rollouts:
    """Rollouts for given texts (dataset answers, baselines, preference pairs), EOS-terminated."""
    prompt = tokenizer(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False)
    encoded = [
        tokenizer(c, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for c in completions
    ]
    width = max(len(ids) for ids in encoded)
    ids = torch.full((len(encoded), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(encoded), width)
    for row, tokens in enumerate(encoded):
        ids[row, : len(tokens)] = torch.tensor(tokens)
        mask[row, : len(tokens)] = 1.0
    return Rollouts(
        prompt["input_ids"],
        prompt["attention_mask"],
        ids,
        mask,
        list(completions),
        list(range(len(prompts))),
    )


class LocalRollout:
    """Sampling with the policy's own `generate` (HF), in the training process."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
        self.model = model
        self.tokenizer = tokenizer

    @torch.no_grad()
    def generate(
        self, prompts: Sequence[str], k: int, max_new_tokens: int, temperature: float
    ) -> Rollouts:
        encoded = self.tokenizer(
            list(prompts), return_tensors="pt", padding=True, add_special_tokens=False
        ).to(self.model.device)
        prompt_ids = encoded["input_ids"].repeat_interleave(k, dim=0)
        prompt_mask = encoded["attention_mask"].repeat_interleave(k, dim=0)
        was_training = self.model.training
        self.model.eval()
        sampling = {"do_sample": True, "temperature": temperature, "top_k": 0, "top_p": 1.0}
        output = self.model.generate(  # stays on the model's device, where training reads it
            input_ids=prompt_ids,
            attention_mask=prompt_mask,
            max_new_tokens=max_new_tokens,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.tokenizer.eos_token_id,
            synced_gpus=False,  # an FSDP policy is gathered whole for it (sharding.py)
            **(sampling if temperature > 0 else {"do_sample": False}),
        )
        self.model.train(was_training)
        completion_ids = output[:, prompt_ids.shape[1] :]
        mask = completion_mask(completion_ids, self.tokenizer.eos_token_id)
        completion_ids = completion_ids.masked_fill(mask == 0, self.tokenizer.pad_token_id)
        texts = self.tokenizer.batch_decode(
            completion_ids.masked_fill(
                completion_ids == self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
            ),
            skip_special_tokens=True,
        )
        index = [i for i in range(len(prompts)) for _ in range(k)]
        return Rollouts(prompt_ids, prompt_mask, completion_ids, mask, texts, index)
