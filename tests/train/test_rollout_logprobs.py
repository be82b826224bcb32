"""Rollouts (masks, encoding, local generation, selection) and per-token log-probabilities."""

from __future__ import annotations

import pytest
import torch

from rlguard.train.logprobs import token_logprobs
from rlguard.train.rollout import LocalRollout, Rollouts, completion_mask, encode_completions
from tiny_models import tiny_causal_lm, tiny_tokenizer

EOS = 2
PROMPTS = ["Question: what is 2 + 3? ", "Write", "Is the response safe? Yes or no. "]


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_causal_lm(tokenizer, seed=0)


# --- completion_mask -----------------------------------------------------------------------------


def test_completion_mask_keeps_the_first_eos_and_masks_what_follows() -> None:
    ids = torch.tensor(
        [
            [5, 6, EOS, 7, EOS],  # EOS mid-way: kept, the rest (a second EOS too) masked
            [EOS, 5, 6, 7, 8],  # EOS first
            [5, 6, 7, 8, 9],  # no EOS: all ones
            [5, 6, 7, 8, EOS],  # EOS last
        ]
    )
    expected = torch.tensor(
        [
            [1, 1, 1, 0, 0],
            [1, 0, 0, 0, 0],
            [1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1],
        ],
        dtype=torch.float32,
    )
    mask = completion_mask(ids, EOS)
    assert mask.dtype == torch.float32
    assert torch.equal(mask, expected)


# --- encode_completions --------------------------------------------------------------------------


def test_encode_completions_appends_eos_and_right_pads(tokenizer) -> None:
    completions = ["The final answer is 5.", "Yes", ""]
    rollouts = encode_completions(tokenizer, PROMPTS, completions)
    assert len(rollouts) == 3
    assert rollouts.texts == completions and rollouts.prompt_index == [0, 1, 2]
    width = rollouts.completion_ids.shape[1]
    for row, text in enumerate(completions):
        tokens = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        n = len(tokens)
        assert rollouts.completion_ids[row, :n].tolist() == tokens
        assert rollouts.completion_mask[row].tolist() == [1.0] * n + [0.0] * (width - n)
        assert (rollouts.completion_ids[row, n:] == tokenizer.pad_token_id).all()
    # prompts are left-padded, so every prompt ends at the right edge
    assert (rollouts.prompt_mask[:, -1] == 1).all()
    assert rollouts.prompt_mask[1, 0] == 0


# --- token_logprobs ------------------------------------------------------------------------------


def unpadded_logprobs(model, prompt_ids: list[int], completion_ids: list[int]) -> torch.Tensor:
    """The reference computation: one unpadded sequence, a plain forward, log_softmax, gather."""
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    logp = logits[len(prompt_ids) - 1 : -1].log_softmax(dim=-1)
    return logp.gather(1, torch.tensor(completion_ids).unsqueeze(1)).squeeze(1)


def test_token_logprobs_of_a_padded_batch_match_unpadded_rows(model, tokenizer) -> None:
    completions = ["The final answer is 5.", "a function", "No"]
    rollouts = encode_completions(tokenizer, PROMPTS, completions)
    assert len(set(rollouts.prompt_mask.sum(dim=1).tolist())) == 3  # all prompt lengths differ
    with torch.no_grad():
        batched = token_logprobs(model, rollouts)
    assert batched.shape == rollouts.completion_ids.shape
    for row in range(len(PROMPTS)):
        prompt = rollouts.prompt_ids[row][rollouts.prompt_mask[row] == 1].tolist()
        n = int(rollouts.completion_mask[row].sum())
        completion = rollouts.completion_ids[row, :n].tolist()
        expected = unpadded_logprobs(model, prompt, completion)
        torch.testing.assert_close(batched[row, :n], expected, atol=1e-5, rtol=1e-5)
        assert (batched[row, n:] == 0).all()


# --- LocalRollout --------------------------------------------------------------------------------


def test_generate_groups_k_completions_per_prompt(model, tokenizer) -> None:
    k = 3
    torch.manual_seed(0)
    rollouts = LocalRollout(model, tokenizer).generate(
        PROMPTS, k, max_new_tokens=6, temperature=1.0
    )
    assert len(rollouts) == len(PROMPTS) * k
    assert rollouts.prompt_index == [i for i in range(len(PROMPTS)) for _ in range(k)]
    encoded = tokenizer(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    for i in range(len(PROMPTS)):
        for row in range(i * k, i * k + k):
            assert torch.equal(rollouts.prompt_ids[row], encoded["input_ids"][i])
            assert torch.equal(rollouts.prompt_mask[row], encoded["attention_mask"][i])
    assert rollouts.completion_ids.shape[0] == len(PROMPTS) * k
    assert rollouts.completion_ids.shape[1] <= 6
    assert model.training is False  # the engine restores the mode it found


def test_generate_greedy_copies_are_identical(model, tokenizer) -> None:
    k = 2
    rollouts = LocalRollout(model, tokenizer).generate(PROMPTS, k, max_new_tokens=6, temperature=0)
    for i in range(len(PROMPTS)):
        first, second = i * k, i * k + 1
        assert torch.equal(rollouts.completion_ids[first], rollouts.completion_ids[second])
        assert rollouts.texts[first] == rollouts.texts[second]


def test_generate_masks_after_eos_and_texts_decode_the_masked_ids(model, tokenizer) -> None:
    """Force EOS as the 3rd token of row 0 only: its mask is [1, 1, 1, 0, ...], its ids after EOS
    are padding, and its text is its first two tokens; other rows run to max_new_tokens."""
    calls = []
    eos = tokenizer.eos_token_id

    def force_eos(module, inputs, output):
        calls.append(None)
        if len(calls) == 3:
            output = output.clone()
            output[0, -1, eos] = 1e4
            output[1:, -1, eos] = -1e4
            return output
        output = output.clone()
        output[..., eos] = -1e4  # no other EOS, so the test does not depend on the weights
        return output

    handle = model.lm_head.register_forward_hook(force_eos)
    try:
        torch.manual_seed(0)
        rollouts = LocalRollout(model, tokenizer).generate(PROMPTS, 2, 8, temperature=1.0)
    finally:
        handle.remove()
    mask = rollouts.completion_mask
    assert mask[0].tolist() == [1.0, 1.0, 1.0] + [0.0] * (mask.shape[1] - 3)
    assert rollouts.completion_ids[0, 2] == eos
    assert (rollouts.completion_ids[0, 3:] == tokenizer.pad_token_id).all()
    assert (mask[1:] == 1).all() and mask.shape[1] == 8
    assert torch.equal(rollouts.lengths, mask.sum(dim=1))
    for row, text in enumerate(rollouts.texts):
        kept = rollouts.completion_ids[row][(mask[row] == 1)].tolist()
        kept = [t for t in kept if t != eos]
        assert text == tokenizer.decode(kept, skip_special_tokens=True)


def test_generate_greedy_rows_match_each_prompt_alone(model, tokenizer) -> None:
    """Left padding in the batch changes nothing: row i*k answers prompts[i] as it would alone."""
    engine = LocalRollout(model, tokenizer)
    batched = engine.generate(PROMPTS, 2, max_new_tokens=6, temperature=0)
    for i, prompt in enumerate(PROMPTS):
        alone = engine.generate([prompt], 1, max_new_tokens=6, temperature=0)
        n = int(alone.completion_mask[0].sum())
        assert batched.completion_ids[2 * i, :n].tolist() == alone.completion_ids[0, :n].tolist()
        assert batched.texts[2 * i] == alone.texts[0]


# --- Rollouts.select -----------------------------------------------------------------------------


def test_select_takes_rows_in_the_given_order(tokenizer) -> None:
    rollouts = encode_completions(tokenizer, PROMPTS, ["a", "bb", "ccc"])
    picked = rollouts.select([2, 0, 2])
    assert isinstance(picked, Rollouts) and len(picked) == 3
    assert picked.texts == ["ccc", "a", "ccc"]
    assert picked.prompt_index == [2, 0, 2]
    for field in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask"):
        assert torch.equal(getattr(picked, field), getattr(rollouts, field)[[2, 0, 2]])
    assert len(rollouts.select([])) == 0
