"""verl's equal-count split and RLHFless's length-aware split: hand cases and properties."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlguard.runtime.policies.assignment import equal_count_split, length_aware_split


def test_equal_count_split_by_hand() -> None:
    assert equal_count_split(5, 2) == [[0, 1, 2], [3, 4]]
    assert equal_count_split(4, 4) == [[0], [1], [2], [3]]
    assert equal_count_split(2, 3) == [[0], [1], []]
    with pytest.raises(ValueError):
        equal_count_split(3, 0)


def test_length_aware_split_by_hand() -> None:
    # sorted longest first: 5 | 1 1 1 1 1 -> equal predicted work, not equal counts
    assert length_aware_split([1, 5, 1, 1, 1, 1], 2) == [[1], [0, 2, 3, 4, 5]]
    assert length_aware_split([10, 40, 20, 30], 2) == [[1, 3], [2, 0]]
    assert length_aware_split([3, 2], 4) == [[0], [1], [], []]
    with pytest.raises(ValueError):
        length_aware_split([1, -1], 1)


def test_length_aware_split_balances_the_work_it_is_given() -> None:
    # sorted longest first: 40 30 20 10; by tokens the cut is 40 | 30 20 10 ... with work that
    # grows with the square of the length, the longest group is an actor's whole share
    lengths = [10, 40, 20, 30]
    assert length_aware_split(lengths, 2) == [[1, 3], [2, 0]]
    assert length_aware_split(lengths, 2, [x**2 for x in lengths]) == [[1], [3, 2, 0]]
    with pytest.raises(ValueError, match="work"):
        length_aware_split(lengths, 2, [1.0])


@given(st.integers(0, 60), st.integers(1, 9))
def test_equal_count_split_partitions_contiguously(n: int, actors: int) -> None:
    chunks = equal_count_split(n, actors)
    assert len(chunks) == actors
    assert [i for c in chunks for i in c] == list(range(n))
    sizes = [len(c) for c in chunks]
    assert max(sizes) - min(sizes) <= 1


@given(st.lists(st.floats(0, 2048), max_size=60), st.integers(1, 9))
def test_length_aware_split_groups_similar_lengths(predicted, actors: int) -> None:
    chunks = length_aware_split(predicted, actors)
    assert len(chunks) == actors
    assert sorted(i for c in chunks for i in c) == list(range(len(predicted)))
    if len(predicted) >= actors:
        assert all(chunks)  # nobody idles when there is enough work
    lengths = np.asarray(predicted)
    filled = [lengths[c] for c in chunks if c]
    for longer, shorter in itertools.pairwise(filled):
        assert longer.min() >= shorter.max()  # actor i holds longer groups than actor i+1
    for c in filled:
        assert list(c) == sorted(c, reverse=True)  # longest first within an actor
    if len(predicted) and actors > 1:
        share = lengths.sum() / actors
        for c in filled[:-1]:
            assert c.sum() <= share + lengths.max() + 1e-6  # no actor far above its share
