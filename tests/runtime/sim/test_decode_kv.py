"""Context-aware decode steps and the KV-cache limit: the event simulation against a step-by-step
reference, preemption by hand, and what consolidating long sequences costs the receiver."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_helpers import batch, profile

from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.decode import generation_floor_s, simulate_generation
from rlguard.runtime.sim.workload import TokenBatch


def reference_actor(
    seqs: list[int], work: TokenBatch, p: TimeProfile, dedup: bool
) -> tuple[dict[int, float], int, int]:
    """One actor decoded one step at a time with vLLM's rules (admit in order while the head's
    context fits with room for a step; evict the latest admitted when the next step would not fit;
    admit nothing in a step that evicted). Returns (finish time per sequence, prefill tokens,
    evictions)."""
    k, length = work.k, work.lengths.reshape(-1)
    prompt = (work.prompt_tokens + work.prefix_tokens).repeat(k)
    cap = p.kv_capacity_tokens or 10**12
    queue, running = deque(seqs), []  # running: seqs in admission order
    done = dict.fromkeys(seqs, 0)  # tokens generated so far
    cached: set[int] = set()
    clock, prefill, evicted, just_evicted, ends = 0.0, 0, 0, False, {}
    while queue or running:
        while not just_evicted and queue and len(running) < p.max_batch:
            head = queue[0]
            context = sum(prompt[s] + done[s] for s in running)
            if running and context + len(running) + prompt[head] + done[head] + 1 > cap:
                break
            queue.popleft()
            tokens = done[head]
            if not dedup:
                tokens += prompt[head]
            elif head // k not in cached:
                tokens += work.prompt_tokens[head // k] + work.prefix_tokens * (not cached)
                cached.add(head // k)
            prefill += tokens
            clock += tokens * p.prefill_s_per_token
            running.append(head)
        just_evicted = False
        context = sum(prompt[s] + done[s] for s in running)
        clock += p.decode_step_s(len(running), context)
        for s in running:
            done[s] += 1
            if done[s] == length[s]:
                ends[s] = clock
        running = [s for s in running if done[s] < length[s]]
        while len(running) > 1 and sum(prompt[s] + done[s] for s in running) + len(running) > cap:
            queue.appendleft(running.pop())
            evicted += 1
            just_evicted = True
    return ends, prefill, evicted


def test_a_step_reads_every_running_sequences_kv_cache() -> None:
    p = profile(per_seq=0.0, per_context=1e-5)
    assert p.decode_step_s(4, 0) == pytest.approx(0.01)
    assert p.decode_step_s(4, 2000) == pytest.approx(0.01 + 2000 * 1e-5)
    # the same batch later in its life: longer contexts, slower steps
    short = simulate_generation([[0]], batch([[50, 50]], prompt=10), p, True, None)
    long = simulate_generation([[0]], batch([[50, 50]], prompt=1000), p, True, None)
    by_hand = sum(0.01 + 1e-5 * 2 * (1000 + j) for j in range(50))
    assert long.end_s == pytest.approx(by_hand)
    assert long.end_s > short.end_s


def test_compute_floor_binds_a_large_batch() -> None:
    p = profile(per_seq=0.0, compute=0.004)  # 3 sequences: 12 ms of matmuls > 10 ms of reads
    result = simulate_generation([[0]], batch([[5, 5, 5]]), p, True, None)
    assert result.end_s == pytest.approx(5 * 0.012)


def test_a_full_cache_evicts_the_latest_admitted_and_prefills_it_again() -> None:
    # two sequences of prompt 10 in a 40-token cache: they start at 20 tokens and grow by 2 a step
    p = profile(per_seq=0.0, kv=40)
    result = simulate_generation([[0]], batch([[30, 30]], prompt=10), p, False, None)
    assert result.preempted >= 1
    assert result.seq_tokens.tolist() == [30, 30]
    assert result.prefill_tokens > 2 * 10  # the evicted one came back with its tokens
    ends, prefill, evicted = reference_actor([0, 1], batch([[30, 30]], prompt=10), p, False)
    assert result.seq_end_s.tolist() == pytest.approx([ends[0], ends[1]])
    assert (result.prefill_tokens, result.preempted) == (prefill, evicted)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 8),
    st.integers(1, 3),
    st.integers(1, 6),
    st.sampled_from([None, 60, 150, 400]),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_event_simulation_matches_a_step_by_step_reference(
    k, groups, actors, slots, kv, dedup, seed
) -> None:
    rng = np.random.default_rng(seed)
    prompts = rng.integers(1, 60, size=groups)  # uneven prompts: some evictions free little
    work = TokenBatch([str(g) for g in range(groups)], prompts, 2, rng.integers(1, 40, (groups, k)))
    p = profile(max_batch=slots, prefill=1e-4, per_seq=2e-4, per_context=1e-5, compute=3e-3, kv=kv)
    assignment = equal_count_split(groups, actors)
    result = simulate_generation(assignment, work, p, dedup, None)
    prefill = evicted = 0
    for groups_of_actor in assignment:
        seqs = [g * k + j for g in groups_of_actor for j in range(k)]
        ends, tokens, evictions = reference_actor(seqs, work, p, dedup)
        assert [result.seq_end_s[s] for s in seqs] == pytest.approx([ends[s] for s in seqs])
        prefill, evicted = prefill + tokens, evicted + evictions
    assert (result.prefill_tokens, result.preempted) == (prefill, evicted)
    assert result.decode_tokens == work.lengths.sum()


def test_consolidating_long_sequences_slows_the_receiver_by_their_kv_reads() -> None:
    # Qwen2.5-7B on an L40S: weights 23.5 ms a step, 88.5 ns per token of context
    p = profile(per_seq=0.0, per_context=8.85e-8)
    p = TimeProfile(**{**vars(p), "decode_s_per_step": 0.0235})
    few = p.decode_step_s(4, 4 * 1500)
    many = p.decode_step_s(150, 150 * 1500)
    assert few / 0.0235 < 1.03  # a few stragglers: barely slower
    assert many / 0.0235 > 1.8  # 150 long tails: their KV reads rival the weights


def test_an_actor_that_received_a_tail_is_not_cut_again() -> None:
    # actors 0 and 1 reach tau early and hand their tails to actor 2; actor 2 then finishes most
    # of its own work but keeps the tails instead of passing them on
    work = batch([[2, 2, 2, 200], [3, 3, 3, 150], [300, 5, 5, 5]])
    result = simulate_generation([[0], [1], [2]], work, profile(), dedup=True, tau=0.75)
    assert result.cuts == 2 and result.moved == 2
    assert result.seq_tokens.tolist() == work.lengths.reshape(-1).tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**31))
def test_no_schedule_beats_the_solo_floor(k, groups, actors, seed) -> None:
    rng = np.random.default_rng(seed)
    work = batch(rng.integers(1, 60, size=(groups, k)).tolist(), prompt=7)
    p = profile(max_batch=4, prefill=1e-4, per_context=1e-5, compute=3e-3, kv=300)
    floor = generation_floor_s(work, p)
    for tau in (None, 0.5):
        result = simulate_generation(equal_count_split(groups, actors), work, p, True, tau)
        assert result.end_s >= floor - 1e-12
    longest = batch([[int(work.lengths.max())]], prompt=7)
    assert simulate_generation([[0]], longest, p, True, None).end_s == pytest.approx(floor)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 8),
    st.integers(1, 3),
    st.integers(1, 6),
    st.sampled_from([None, 60, 150, 400]),
    st.integers(0, 2**31),
)
def test_an_actors_time_is_its_work_counts_times_the_profile(
    k, groups, actors, slots, kv, seed
) -> None:
    # what calib/fit.py relies on: without a compute floor, an actor's time is linear in the
    # profile's terms, with its counted steps, sequence-steps, context read and prefill
    rng = np.random.default_rng(seed)
    prompts = rng.integers(1, 60, size=groups)
    work = TokenBatch([str(g) for g in range(groups)], prompts, 2, rng.integers(1, 40, (groups, k)))
    p = profile(max_batch=slots, prefill=1e-4, per_seq=2e-4, per_context=1e-5, kv=kv)
    result = simulate_generation(equal_count_split(groups, actors), work, p, True, None)
    for end, w in zip(result.actor_end_s, result.actor_work, strict=True):
        linear = (
            w.steps * p.decode_s_per_step
            + w.seq_steps * p.decode_s_per_seq
            + w.context_tokens * p.decode_s_per_context_token
            + w.prefill_tokens * p.prefill_s_per_token
        )
        assert end == pytest.approx(linear)
    assert sum(w.seq_steps for w in result.actor_work) == result.decode_tokens
    assert sum(w.prefill_tokens for w in result.actor_work) == result.prefill_tokens
