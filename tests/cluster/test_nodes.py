"""GPU placement: best fit inside a node, whole nodes for each full node's worth, bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.cluster.nodes import Nodes


def used(nodes: Nodes) -> list[int]:
    return [nodes.per_node - f for f in nodes.free]


def test_fresh_nodes_are_all_free() -> None:
    nodes = Nodes(3, 8)
    assert nodes.free == [8, 8, 8]
    assert nodes.free_total == 24
    assert nodes.capacity == 24


def test_best_fit_prefers_the_fullest_node_that_fits() -> None:
    nodes = Nodes(3, 8)
    nodes.take([(0, 5), (1, 2)])  # free: 3, 6, 8
    assert nodes.free == [3, 6, 8]
    assert nodes.place(3) == [(0, 3)]  # exactly fills node 0
    assert nodes.place(4) == [(1, 4)]  # node 1 (6 free) before the empty node 2
    assert nodes.place(3) == [(2, 3)]  # only node 2 still has 3
    assert nodes.free == [0, 2, 5]
    assert nodes.place(2) == [(1, 2)]  # 2 free on node 1 beats 5 on node 2
    assert nodes.free_total == 5


def test_job_that_fits_nowhere_gets_none_and_changes_nothing() -> None:
    nodes = Nodes(2, 8)
    nodes.take([(0, 4), (1, 4)])  # 8 free in all, 4 per node
    assert nodes.place(5) is None
    assert nodes.place(8) is None
    assert nodes.free == [4, 4]
    assert nodes.free_total == 8


def test_sixteen_gpu_job_takes_two_whole_nodes() -> None:
    nodes = Nodes(3, 8)
    nodes.take([(1, 1)])
    placement = nodes.place(16)
    assert placement is not None
    assert sorted(placement) == [(0, 8), (2, 8)]
    assert nodes.free == [0, 7, 0]
    assert nodes.place(16) is None  # one partially free node is not two whole ones


def test_full_node_multiple_plus_remainder() -> None:
    nodes = Nodes(3, 8)
    nodes.take([(2, 4)])  # node 2 has 4 free: the remainder's best fit
    placement = nodes.place(12)
    assert placement is not None
    assert sorted(placement) == [(0, 8), (2, 4)]
    assert nodes.free == [0, 8, 0]


def test_remainder_on_a_full_node_leaves_enough_whole_nodes() -> None:
    # 12 GPUs on two empty nodes: the remainder must take one, the full 8 the other.
    nodes = Nodes(2, 8)
    placement = nodes.place(12)
    assert placement is not None
    assert sorted(c for _, c in placement) == [4, 8]
    assert len({n for n, _ in placement}) == 2
    assert nodes.free_total == 4
    # With one whole node and 7 free on the other, the remainder goes there...
    nodes = Nodes(2, 8)
    nodes.take([(1, 1)])
    assert sorted(nodes.place(12) or []) == [(0, 8), (1, 4)]
    # ... but with one whole node and only 3 free on the other, 12 does not fit (11 free).
    nodes = Nodes(2, 8)
    nodes.take([(1, 5)])
    assert nodes.place(12) is None
    assert nodes.free == [8, 3]


def test_release_fits_back_and_take() -> None:
    nodes = Nodes(2, 8)
    a = nodes.place(6)
    b = nodes.place(2)
    assert a is not None and b is not None
    assert nodes.free_total == 8
    nodes.release(a)
    assert nodes.free_total == 14
    assert nodes.fits_back(a)
    c = nodes.place(8)  # takes a whole node: node 1, which is completely free
    assert c is not None
    assert nodes.fits_back(a)  # a's node still has its 6 GPUs free
    nodes.take(a)
    assert nodes.free_total == 0
    assert not nodes.fits_back(a)
    nodes.release(c)
    nodes.release(b)
    nodes.release(a)
    assert nodes.free == [8, 8]
    assert nodes.free_total == 16


def test_fits_back_fails_once_a_node_was_reused() -> None:
    nodes = Nodes(1, 8)
    a = nodes.place(8)
    assert a == [(0, 8)]
    nodes.release(a)
    assert nodes.place(1) == [(0, 1)]
    assert not nodes.fits_back(a)


def test_cluster_smaller_than_a_node() -> None:
    nodes = Nodes(1, 4)
    assert nodes.place(4) == [(0, 4)]
    assert nodes.place(1) is None


def _feasible(nodes: Nodes, gpus: int) -> bool:
    """Whether `gpus` can be placed: whole free nodes per full chunk, the remainder anywhere."""
    whole, rest = divmod(gpus, nodes.per_node)
    full = sum(f == nodes.per_node for f in nodes.free)
    if rest == 0:
        return full >= whole
    partial = any(rest <= f < nodes.per_node for f in nodes.free)
    return (partial and full >= whole) or full >= whole + 1


@settings(max_examples=200, deadline=None)
@given(
    n_nodes=st.integers(1, 4),
    per_node=st.sampled_from([1, 2, 4, 8]),
    ops=st.lists(st.tuples(st.booleans(), st.integers(1, 40)), max_size=40),
)
def test_random_place_release_keeps_bookkeeping_consistent(n_nodes, per_node, ops) -> None:
    nodes = Nodes(n_nodes, per_node)
    held: list[list[tuple[int, int]]] = []
    for is_place, x in ops:
        if is_place or not held:
            gpus = x % (n_nodes * per_node) + 1
            before = list(nodes.free)
            feasible = _feasible(nodes, gpus)
            placement = nodes.place(gpus)
            assert (placement is not None) == feasible
            if placement is None:
                assert nodes.free == before
            else:
                assert sum(c for _, c in placement) == gpus
                assert len({n for n, _ in placement}) == len(placement)
                for node, count in placement:
                    assert 0 < count <= per_node
                    assert before[node] >= count
                    if count == per_node:
                        assert before[node] == per_node  # whole chunks take whole nodes
                rest = gpus % per_node
                if rest:
                    rest_node = next(n for n, c in placement if c == rest)
                    # best fit: no node that fits the remainder has fewer free GPUs
                    assert before[rest_node] == min(f for f in before if f >= rest)
                held.append(placement)
        else:
            placement = held.pop(x % len(held))
            nodes.release(placement)
            assert nodes.fits_back(placement)  # its GPUs are free again right after release
        assert nodes.free_total == sum(nodes.free)
        assert all(0 <= f <= per_node for f in nodes.free)
        assert nodes.free_total == n_nodes * per_node - sum(
            c for placement in held for _, c in placement
        )
    for placement in held:
        nodes.release(placement)
    assert nodes.free == [per_node] * n_nodes


@pytest.mark.parametrize("gpus", [1, 3, 8, 9, 16, 24])
def test_place_then_release_restores_everything(gpus) -> None:
    nodes = Nodes(3, 8)
    placement = nodes.place(gpus)
    assert placement is not None
    assert nodes.free_total == 24 - gpus
    nodes.release(placement)
    assert nodes.free == [8, 8, 8]
    assert nodes.free_total == 24
