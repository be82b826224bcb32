"""The generation role on its own (no Ray): how full its batch stays, and the cut at tau."""

from __future__ import annotations

import pytest

from rlguard.runtime.executors.functions import GenerationFunction, GenerationSpec
from rlguard.runtime.generation.generator import GroupRequest


@pytest.fixture(scope="module")
def generation(policy_dir, tokenizer):
    return GenerationFunction(GenerationSpec(str(policy_dir), tokenizer.eos_token_id, 4))


def requests(tokenizer, budgets):
    ids = tokenizer("Answer yes or no. ", add_special_tokens=False)["input_ids"]
    return [GroupRequest(g, ids, 2, budget, 1.0, 3) for g, budget in enumerate(budgets)]


def test_idle_slots_count_the_empty_share_of_each_decode_step(generation, tokenizer):
    call = generation.generate(requests(tokenizer, [6, 2]))
    lengths = [len(s.tokens) for s in call.output.samples]  # all 4 samples fit in the batch
    expected = sum(4 - sum(n >= step for n in lengths) for step in range(1, max(lengths) + 1))
    assert call.idle_slot_steps == expected
    assert expected > 0  # the short group's slots idle while the long one decodes
    assert call.utilized_s > 0


def test_tau_cuts_once_that_share_of_the_sequences_has_finished(generation, tokenizer):
    call = generation.generate(requests(tokenizer, [6, 2]), tau=0.5)
    finished = [s for s in call.output.samples if s.finished]
    assert 2 <= len(finished) < 4
    assert all(not s.finished for s in call.output.samples if s.group_id == 0)
