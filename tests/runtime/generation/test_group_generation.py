"""GroupGenerator: samples independent of batch, dedup, slots and migration; prefill counts."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from rlguard.runtime.generation.generator import GroupGenerator, GroupRequest, shared_prefix_length

K = 4


@pytest.fixture(scope="module")
def requests(tokenizer) -> list[GroupRequest]:
    """Prompts of different lengths and first tokens (no shared prefix), sampled and greedy."""
    generator = torch.Generator().manual_seed(0)
    lengths = [5, 9, 14, 3, 8]
    rows = [torch.randint(4, len(tokenizer), (n,), generator=generator).tolist() for n in lengths]
    for first, row in enumerate(rows):
        row[0] = 10 + first
    temperatures = [1.0, 0.7, 1.3, 0.0, 1.0]
    return [
        GroupRequest(group, row, K, 10 + group, temperature, seed=42)
        for group, (row, temperature) in enumerate(zip(rows, temperatures, strict=True))
    ]


@pytest.fixture(scope="module")
def reference(model, tokenizer, requests):
    return GroupGenerator(model, tokenizer).generate(requests)


def tokens(output) -> list[list[int]]:
    return [s.tokens for s in output.samples]


@pytest.mark.parametrize(
    "options",
    [{"dedup_prefill": False}, {"max_batch": 1}, {"max_batch": 3}, {"share_prefix": False}],
)
def test_samples_do_not_depend_on_dedup_or_slots(model, tokenizer, requests, reference, options):
    output = GroupGenerator(model, tokenizer, **options).generate(requests)
    assert tokens(output) == tokens(reference)


def test_samples_do_not_depend_on_the_other_groups_in_the_call(
    model, tokenizer, requests, reference
):
    generator = GroupGenerator(model, tokenizer)
    alone = [s.tokens for r in requests for s in generator.generate([r]).samples]
    assert alone == tokens(reference)
    reversed_call = generator.generate(list(reversed(requests))).samples
    by_id = {(s.group_id, s.sample): s.tokens for s in reversed_call}
    assert [by_id[(s.group_id, s.sample)] for s in reference.samples] == tokens(reference)


def test_a_different_seed_draws_different_samples(model, tokenizer, requests, reference) -> None:
    other = GroupGenerator(model, tokenizer).generate([replace(r, seed=43) for r in requests])
    sampled = [i for i, s in enumerate(reference.samples) if requests[s.group_id].temperature > 0]
    assert all(tokens(other)[i] != tokens(reference)[i] for i in sampled)
    greedy = [s.tokens for s in other.samples if requests[s.group_id].temperature == 0]
    assert len(set(map(tuple, greedy))) == 1  # temperature 0: the K samples are the argmax path


def test_dedup_prefills_each_prompt_once(model, tokenizer, requests, reference) -> None:
    plain = GroupGenerator(model, tokenizer, dedup_prefill=False).generate(requests)
    prompt_tokens = sum(len(r.prompt_ids) for r in requests)
    assert reference.prefill_tokens == prompt_tokens
    assert plain.prefill_tokens == K * prompt_tokens
    one_slot = GroupGenerator(model, tokenizer, max_batch=1).generate(requests)
    assert one_slot.prefill_tokens == prompt_tokens  # prompt caches wait for late samples
    generated = sum(len(s.tokens) for s in reference.samples)
    assert reference.decode_tokens == plain.decode_tokens == generated


def test_a_shared_system_prefix_is_prefilled_once(model, tokenizer, requests, reference) -> None:
    system = [20, 21, 22, 23, 24, 25]
    prefixed = [replace(r, prompt_ids=system + r.prompt_ids) for r in requests]
    shared = GroupGenerator(model, tokenizer).generate(prefixed)
    apart = GroupGenerator(model, tokenizer, share_prefix=False).generate(prefixed)
    prompt_tokens = sum(len(r.prompt_ids) for r in requests)
    assert shared.prefill_tokens == len(system) + prompt_tokens
    assert apart.prefill_tokens == len(system) * len(requests) + prompt_tokens
    assert tokens(shared) == tokens(apart)


def test_shared_prefix_leaves_every_prompt_a_token_of_its_own() -> None:
    assert shared_prefix_length([[1, 2, 3], [1, 2, 4, 5]]) == 2
    assert shared_prefix_length([[1, 2], [1, 2, 3]]) == 1
    assert shared_prefix_length([[1, 2], [3, 2]]) == 0


@pytest.mark.parametrize("options", [{}, {"dedup_prefill": False, "max_batch": 5}])
def test_cut_samples_resume_on_a_fresh_generator_identically(
    model, tokenizer, requests, reference, options
) -> None:
    cut = GroupGenerator(model, tokenizer, max_batch=7).generate(requests, stop_after_tokens=4)
    eos = tokenizer.eos_token_id
    for sample in cut.samples:  # cut after 4 tokens unless EOS came first
        assert sample.finished == (eos in sample.tokens)
        assert len(sample.tokens) == 4 or sample.tokens[-1] == eos
    assert sum(not s.finished for s in cut.samples) > len(cut.samples) // 2
    resumed_requests = [
        replace(r, prefix=[s.tokens for s in cut.samples if s.group_id == r.group_id])
        for r in requests
    ]
    resumed = GroupGenerator(model, tokenizer, **options).generate(resumed_requests)
    assert tokens(resumed) == tokens(reference)
    assert all(s.finished for s in resumed.samples)
    assert resumed.decode_tokens == reference.decode_tokens - cut.decode_tokens


def test_a_callback_cuts_everything_at_once_and_resuming_completes_it(
    model, tokenizer, requests, reference
) -> None:
    calls = []

    def cut_when_half_finished(finished: int, total: int) -> bool:
        calls.append((finished, total))
        return finished >= total // 2

    cut = GroupGenerator(model, tokenizer, max_batch=8).generate(
        requests, on_step=cut_when_half_finished
    )
    finished = sum(s.finished for s in cut.samples)
    assert calls[-1] == (finished, len(cut.samples))
    assert len(cut.samples) // 2 <= finished < len(cut.samples)
    assert any(s.tokens == [] for s in cut.samples)  # never admitted: nothing generated yet
    prefixes = {(s.group_id, s.sample): s.tokens for s in cut.samples}
    resumed = GroupGenerator(model, tokenizer).generate(
        [replace(r, prefix=[prefixes[(r.group_id, i)] for i in range(K)]) for r in requests]
    )
    assert tokens(resumed) == tokens(reference)


def test_eos_ends_a_sample_and_frees_its_slot(model, tokenizer, requests) -> None:
    """Declaring a frequent token the EOS must end each sample at its first occurrence, with the
    tokens before it unchanged (sampling never looks at the EOS id)."""
    free = GroupGenerator(model, -1).generate(requests)  # no token ends a sample
    sampled = [
        t for s in free.samples if requests[s.group_id].temperature > 0 for t in s.tokens[1:]
    ]
    eos = int(torch.bincount(torch.tensor(sampled)).argmax())
    ended = GroupGenerator(model, eos, max_batch=3).generate(requests)
    for before, after in zip(free.samples, ended.samples, strict=True):
        cut = before.tokens.index(eos) + 1 if eos in before.tokens else len(before.tokens)
        assert after.tokens == before.tokens[:cut] and after.finished
    assert sum(s.tokens[-1] == eos for s in ended.samples) >= 2
    assert ended.decode_tokens == sum(len(s.tokens) for s in ended.samples)


def test_max_new_tokens_is_per_group_and_complete_prefixes_are_returned_as_is(
    model, tokenizer, requests, reference
) -> None:
    eos = tokenizer.eos_token_id
    for sample in reference.samples:
        limit = requests[sample.group_id].max_new_tokens
        assert len(sample.tokens) == limit or sample.tokens.index(eos) == len(sample.tokens) - 1
    assert sum(len(s.tokens) == requests[s.group_id].max_new_tokens for s in reference.samples) > K
    done = replace(requests[0], prefix=[s.tokens for s in reference.samples[:K]])
    output = GroupGenerator(model, tokenizer).generate([done])
    assert tokens(output) == tokens(reference)[:K]
    assert output.prefill_tokens == output.decode_tokens == 0


def test_greedy_generation_equals_hf_generate(model, tokenizer, requests) -> None:
    request = replace(requests[1], temperature=0.0, k=2, max_new_tokens=12)
    ours = GroupGenerator(model, tokenizer, dedup_prefill=False).generate([request])
    hf = model.generate(
        input_ids=torch.tensor([request.prompt_ids]),
        max_new_tokens=12,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )[0, len(request.prompt_ids) :].tolist()
    assert tokens(ours) == [hf, hf]


def test_bad_requests_are_refused(model, tokenizer, requests) -> None:
    with pytest.raises(ValueError, match="temperature"):
        replace(requests[0], temperature=-1.0)
    with pytest.raises(ValueError, match="prefix has 1 entries"):
        replace(requests[0], prefix=[[5]])
    with pytest.raises(ValueError, match="repeat"):
        GroupGenerator(model, tokenizer).generate([requests[0], requests[0]])
    eos = tokenizer.eos_token_id
    with pytest.raises(ValueError, match="after EOS"):
        GroupGenerator(model, tokenizer).generate([replace(requests[0], k=1, prefix=[[eos, 5]])])
