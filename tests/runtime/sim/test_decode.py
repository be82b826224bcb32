"""The generation-phase simulation: step times by hand, dedup prefill, migration, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_helpers import batch, profile

from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.sim.decode import simulate_generation


def test_continuous_batching_times_by_hand() -> None:
    # one actor, two sequences of 3 and 5 tokens decoded together:
    # 3 steps with 2 running, then 2 steps with 1 running
    result = simulate_generation([[0]], batch([[3, 5]]), profile(), dedup=True, tau=None)
    expected = 3 * (0.01 + 2 * 0.001) + 2 * (0.01 + 0.001)
    assert result.end_s == pytest.approx(expected)
    assert result.seq_end_s.tolist() == pytest.approx([3 * 0.012, expected])
    assert result.decode_tokens == 8


def test_full_actor_queues_and_admits_as_slots_free() -> None:
    # one slot: the sequences run one after the other
    result = simulate_generation([[0]], batch([[3, 5]]), profile(max_batch=1), True, None)
    assert result.end_s == pytest.approx(8 * 0.011)


def test_dedup_prefills_a_group_once_and_the_prefix_once_per_actor() -> None:
    work = batch([[2, 2, 2, 2], [2, 2, 2, 2]], prompt=10, prefix=5)
    p = profile(prefill=0.001)
    dedup = simulate_generation([[0, 1]], work, p, dedup=True, tau=None)
    plain = simulate_generation([[0, 1]], work, p, dedup=False, tau=None)
    assert dedup.prefill_tokens == 5 + 10 + 10
    assert plain.prefill_tokens == 8 * (5 + 10)
    assert plain.end_s - dedup.end_s == pytest.approx((120 - 25) * 0.001)


def test_cut_moves_the_tail_and_releases_the_actor() -> None:
    # actor 0: three short sequences and one long; actor 1: long ones with free slots
    work = batch([[2, 2, 2, 200], [300, 300, 300, 300]])
    result = simulate_generation([[0], [1]], work, profile(), dedup=True, tau=0.75)
    assert result.cuts == 1 and result.moved == 1
    assert result.actor_end_s[0] == pytest.approx(2 * (0.01 + 4 * 0.001))
    assert result.actor_end_s[0] < result.actor_end_s[1] == result.end_s
    assert result.seq_tokens.tolist() == work.lengths.reshape(-1).tolist()
    # the moved sequence is prefilled again on its new actor: prompt + 2 generated tokens
    kept = simulate_generation([[0], [1]], work, profile(), dedup=True, tau=None)
    assert result.prefill_tokens == kept.prefill_tokens + 10 + 2


def test_no_cut_when_the_tail_does_not_fit_elsewhere() -> None:
    work = batch([[2, 2, 2, 200], [300, 300, 300, 300]])
    result = simulate_generation([[0], [1]], work, profile(max_batch=4), True, 0.75)
    assert result.cuts == 0


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 12),
    st.integers(1, 5),
    st.integers(1, 6),
    st.sampled_from([None, 0.3, 0.6, 0.9, 1.0]),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_every_sample_is_generated_exactly_once(k, groups, actors, slots, tau, dedup, seed):
    rng = np.random.default_rng(seed)
    work = batch(rng.integers(1, 60, size=(groups, k)).tolist())
    assignment = equal_count_split(groups, actors)
    result = simulate_generation(assignment, work, profile(max_batch=slots), dedup, tau)
    lengths = work.lengths.reshape(-1)
    assert result.seq_tokens.tolist() == lengths.tolist()  # each token once, none lost
    assert result.decode_tokens == lengths.sum()
    assert not np.isnan(result.seq_end_s).any()
    assert result.end_s == pytest.approx(max(result.seq_end_s.max(), max(result.actor_end_s)))
    if tau is None or tau == 1.0:
        assert result.moved == 0
