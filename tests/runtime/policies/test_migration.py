"""Cut-and-migrate: when to cut, and where the tail goes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlguard.errors import InputError
from rlguard.runtime.policies.migration import plan_moves, should_cut


def test_should_cut_by_hand() -> None:
    assert should_cut(9, 10, 0.9)
    assert not should_cut(8, 10, 0.9)
    assert not should_cut(10, 10, 0.9)  # nothing left to move
    assert not should_cut(9, 10, 1.0)  # tau = 1 never cuts
    assert should_cut(1, 10, 0.1)
    assert not should_cut(0, 0, 0.5)


@pytest.mark.parametrize("tau", [0.0, -0.5, 1.01, 2.0])
def test_tau_outside_the_unit_interval_is_an_input_error(tau: float) -> None:
    with pytest.raises(InputError, match="tau"):
        should_cut(1, 2, tau)


def test_plan_moves_spreads_over_the_freest_targets() -> None:
    moves = plan_moves({0: [10, 11, 12]}, {0: 5, 1: 2, 2: 1})
    assert moves == [(10, 0, 1), (11, 0, 1), (12, 0, 2)]
    assert plan_moves({0: [1, 2, 3]}, {1: 1}) == [(1, 0, 1)]  # only what fits
    assert plan_moves({0: [1]}, {0: 9}) == []  # never to itself


@given(
    st.dictionaries(
        st.integers(0, 5), st.lists(st.integers(0, 10**6), max_size=8, unique=True), max_size=4
    ),
    st.dictionaries(st.integers(0, 5), st.integers(0, 6), max_size=6),
)
def test_moves_respect_slots_and_sources(remaining, free) -> None:
    seen = set()
    for key in remaining:  # a sequence lives on one actor
        remaining[key] = [s + 10**7 * key for s in remaining[key]]
    moves = plan_moves(remaining, free)
    used: dict[int, int] = {}
    for seq, source, target in moves:
        assert source != target and seq in remaining[source] and seq not in seen
        seen.add(seq)
        used[target] = used.get(target, 0) + 1
    assert all(used[t] <= free.get(t, 0) for t in used)
