"""Left-padded, ragged KV rows give every row the logits it would have alone, and HF's logits."""

from __future__ import annotations

import torch

from rlguard.runtime.generation.kv_batch import KVBatch

TOLERANCE = 1e-5


def random_rows(tokenizer, lengths: list[int], seed: int = 0) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(4, len(tokenizer), (n,), generator=generator).tolist() for n in lengths]


def alone(model, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0, -1]


def assert_rows_match_unbatched(model, batch: KVBatch, sequences: list[list[int]]) -> None:
    assert len(batch) == len(sequences)
    for row, tokens in enumerate(sequences):
        assert torch.allclose(batch.logits[row], alone(model, tokens), atol=TOLERANCE, rtol=0)


def test_ragged_rows_that_leave_and_join_keep_their_unbatched_logits(model, tokenizer) -> None:
    prompts = random_rows(tokenizer, [7, 15, 3])
    batch = KVBatch.concat([KVBatch.prefill(model, [p]) for p in prompts])
    sequences = [list(p) for p in prompts]
    assert_rows_match_unbatched(model, batch, sequences)
    feed = random_rows(tokenizer, [4, 4, 4], seed=1)
    for step in range(4):
        batch.step(model, torch.tensor([row[step] for row in feed]))
        for tokens, row in zip(sequences, feed, strict=True):
            tokens.append(row[step])
        assert_rows_match_unbatched(model, batch, sequences)
    # the longest row leaves: its padding columns go with it
    batch, sequences = batch.select([0, 2]), [sequences[0], sequences[2]]
    assert batch.mask.shape[1] == max(len(s) for s in sequences)
    assert_rows_match_unbatched(model, batch, sequences)
    # a new group joins with two copies of its prompt
    newcomer = random_rows(tokenizer, [20], seed=2)[0]
    batch = KVBatch.concat([batch, KVBatch.prefill(model, [newcomer]).repeat(2)])
    sequences += [list(newcomer), list(newcomer)]
    for token in (5, 6, 7):
        batch.step(model, torch.full((4,), token))
        sequences = [[*s, token] for s in sequences]
        assert_rows_match_unbatched(model, batch, sequences)


def test_prefill_after_a_past_continues_it_and_leaves_it_untouched(model, tokenizer) -> None:
    prompt, more = random_rows(tokenizer, [9, 5])
    past = KVBatch.prefill(model, [prompt])
    keys_before = past.layers[0][0].clone()
    continued = KVBatch.prefill(model, [more], past=past)
    assert torch.allclose(continued.logits[0], alone(model, prompt + more), atol=TOLERANCE, rtol=0)
    assert torch.equal(past.layers[0][0], keys_before)
    assert torch.allclose(past.logits[0], alone(model, prompt), atol=TOLERANCE, rtol=0)


def test_per_step_logits_equal_hf_generates_for_the_same_tokens(model, tokenizer) -> None:
    prompts = random_rows(tokenizer, [6, 11], seed=3)
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p for p in prompts])
    mask = (torch.arange(width) >= torch.tensor([[width - len(p)] for p in prompts])).long()
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=6,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=None,
    )
    generated = out.sequences[:, width:]
    batch = KVBatch.concat([KVBatch.prefill(model, [p]) for p in prompts])
    for step, hf_logits in enumerate(out.logits):
        assert torch.allclose(batch.logits, hf_logits, atol=1e-4, rtol=0)
        batch.step(model, generated[:, step])
