"""to_rollouts pads, masks and decodes generated samples exactly like LocalRollout."""

from __future__ import annotations

import pytest
import torch

from rlguard.runtime.generation.generator import GroupGenerator, GroupRequest, SampleResult
from rlguard.runtime.generation.rollouts import to_rollouts
from rlguard.train.rollout import LocalRollout

PROMPTS = ["Question: what is 2 + 3? ", "Write", "Is the response safe? Yes or no. "]


def test_greedy_samples_give_the_same_rollouts_as_local_generate(model, tokenizer) -> None:
    k, max_new_tokens = 2, 9
    local = LocalRollout(model, tokenizer).generate(PROMPTS, k, max_new_tokens, temperature=0.0)
    prompts_ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    requests = [
        GroupRequest(group, ids, k, max_new_tokens, temperature=0.0, seed=0)
        for group, ids in enumerate(prompts_ids)
    ]
    samples = GroupGenerator(model, tokenizer).generate(requests).samples
    ours = to_rollouts(list(reversed(samples)), prompts_ids, tokenizer)  # any order in
    assert torch.equal(ours.prompt_ids, local.prompt_ids)
    assert torch.equal(ours.prompt_mask, local.prompt_mask)
    assert torch.equal(ours.completion_ids, local.completion_ids)
    assert torch.equal(ours.completion_mask, local.completion_mask)
    assert ours.texts == local.texts
    assert ours.prompt_index == local.prompt_index == [0, 0, 1, 1, 2, 2]


def test_completions_are_masked_through_eos_and_right_padded(tokenizer) -> None:
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    hello = tokenizer("sea", add_special_tokens=False)["input_ids"]
    samples = [
        SampleResult(0, 0, [*hello, eos], finished=True),
        SampleResult(0, 1, [*hello, 7, 8, 9], finished=True),  # max_new_tokens of its group
        SampleResult(1, 0, [eos], finished=True),
        SampleResult(1, 1, [5, 6], finished=True),  # a shorter limit, no EOS
    ]
    rollouts = to_rollouts(samples, [[4, 5, 6], [7]], tokenizer)
    width = len(hello) + 3
    assert rollouts.completion_ids.shape == (4, width)
    assert rollouts.completion_mask.sum(dim=1).tolist() == [len(hello) + 1, width, 1, 2]
    assert rollouts.completion_ids[0, len(hello)] == eos
    assert rollouts.completion_ids[3, 2:].tolist() == [pad] * (width - 2)
    assert rollouts.prompt_ids[2:].tolist() == [[pad, pad, 7]] * 2
    assert rollouts.prompt_mask[2:].tolist() == [[0, 0, 1]] * 2
    assert rollouts.texts[0] == "sea" and rollouts.texts[2] == ""
    assert rollouts.completion_mask.dtype == torch.float32


def test_cut_samples_are_refused(tokenizer) -> None:
    with pytest.raises(ValueError, match="cut before their end"):
        to_rollouts([SampleResult(0, 0, [5], finished=False)], [[4]], tokenizer)
