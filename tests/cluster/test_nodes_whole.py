"""Whole nodes for multi-node jobs come from a heap; they must be the ones sorting would pick."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.nodes import Nodes


class SortingNodes(Nodes):
    """The reference: sort every completely free node at each placement."""

    def _lowest_whole(self, count: int) -> list[int]:
        return sorted(self._buckets[self.per_node])[:count]


@pytest.mark.parametrize(
    ("n_nodes", "sizes", "ops"),
    [
        (24, [1, 2, 4, 8, 12, 16, 24, 40], 5000),  # many multi-node jobs
        (4, [1, 1, 1, 2, 8], 20000),  # nodes empty often, few whole-node jobs: the heap compacts
    ],
)
def test_whole_nodes_are_the_lowest_numbered_free_ones(n_nodes, sizes, ops) -> None:
    rng = np.random.default_rng(0)
    fast, slow = Nodes(n_nodes), SortingNodes(n_nodes)
    held: list[list[tuple[int, int]]] = []
    for _ in range(ops):
        if held and rng.random() < 0.5:
            placement = held.pop(int(rng.integers(len(held))))
            fast.release(placement)
            slow.release(placement)
            continue
        gpus = int(rng.choice(sizes))
        placement = fast.place(gpus)
        assert placement == slow.place(gpus)
        if placement is not None:
            held.append(placement)
        assert fast.free == slow.free
