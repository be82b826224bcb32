"""Generated samples as the trainer's `Rollouts`, padded and decoded exactly like `LocalRollout`."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from rlguard.runtime.generation.generator import SampleResult
from rlguard.train.rollout import Rollouts, completion_mask


def left_padded(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
    return ids, mask


def to_rollouts(
    samples: Sequence[SampleResult],
    prompts_ids: Sequence[Sequence[int]],
    tokenizer: PreTrainedTokenizerBase,
) -> Rollouts:
    """One row per sample, sorted by (group_id, sample) so a group's K rows are adjacent as the
    `RolloutEngine` protocol requires; `group_id` indexes `prompts_ids` and becomes `prompt_index`.
    Prompts are left-padded, completions right-padded and masked up to and including the first EOS
    (or their last token), texts decoded without special tokens."""
    unfinished = [(s.group_id, s.sample) for s in samples if not s.finished]
    if unfinished:
        raise ValueError(f"samples cut before their end cannot train: {unfinished[:5]}")
    ordered = sorted(samples, key=lambda s: (s.group_id, s.sample))
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    prompt_ids, prompt_mask = left_padded([prompts_ids[s.group_id] for s in ordered], pad)
    width = max(len(s.tokens) for s in ordered)
    completion_ids = torch.full((len(ordered), width), pad, dtype=torch.long)
    for i, sample in enumerate(ordered):
        completion_ids[i, : len(sample.tokens)] = torch.tensor(sample.tokens, dtype=torch.long)
    lengths = torch.tensor([len(s.tokens) for s in ordered])
    mask = completion_mask(completion_ids, eos) * (torch.arange(width) < lengths[:, None])
    completion_ids = completion_ids.masked_fill(mask == 0, pad)
    texts = tokenizer.batch_decode(
        completion_ids.masked_fill(completion_ids == eos, pad), skip_special_tokens=True
    )
    index = [s.group_id for s in ordered]
    return Rollouts(prompt_ids, prompt_mask, completion_ids, mask, texts, index)
