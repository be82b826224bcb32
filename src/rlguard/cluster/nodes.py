"""GPU placement on nodes of a fixed size: best fit inside one node, whole nodes for larger jobs."""

from __future__ import annotations

import heapq


class Nodes:
    """Free-GPU counts per node, bucketed by count so a best-fit lookup costs O(node size).

    Whole nodes go to a job lowest-numbered first; a heap of the completely free nodes (entries
    checked when popped, since a node may have been used since it was pushed) finds them without
    sorting thousands of nodes per placement.
    """

    def __init__(self, n_nodes: int, gpus_per_node: int = 8) -> None:
        self.per_node = gpus_per_node
        self.free = [gpus_per_node] * n_nodes
        self.free_total = gpus_per_node * n_nodes
        self._buckets: list[set[int]] = [set() for _ in range(gpus_per_node + 1)]
        self._buckets[gpus_per_node] = set(range(n_nodes))
        self._whole = list(range(n_nodes))  # a heap holding every completely free node

    @property
    def capacity(self) -> int:
        return self.per_node * len(self.free)

    def _set(self, node: int, free: int) -> None:
        self._buckets[self.free[node]].discard(node)
        self.free_total += free - self.free[node]
        self.free[node] = free
        self._buckets[free].add(node)
        if free == self.per_node:
            heapq.heappush(self._whole, node)
            if len(self._whole) > 2 * len(self._buckets[free]) + 64:  # mostly stale entries
                self._whole = sorted(self._buckets[free])

    def place(self, gpus: int) -> list[tuple[int, int]] | None:
        """Reserve `gpus` GPUs; return [(node, count)], or None when they do not fit.

        The remainder below a node's size goes to the best-fitting node (least free GPUs that
        still fit, to keep whole nodes free); each full node's worth takes a completely free node.
        """
        whole, rest = divmod(gpus, self.per_node)
        full = self._buckets[self.per_node]
        rest_node = self._best_fit(rest) if rest else None
        if rest and rest_node is None:
            return None
        if whole > len(full) - (rest_node in full):
            return None
        placement: list[tuple[int, int]] = []
        if rest_node is not None:
            placement.append((rest_node, rest))
            self._set(rest_node, self.free[rest_node] - rest)
        if whole:
            for node in self._lowest_whole(whole):
                placement.append((node, self.per_node))
                self._set(node, 0)
        return placement

    def _lowest_whole(self, count: int) -> list[int]:
        """Pop the `count` lowest-numbered completely free nodes (the caller then fills them)."""
        picked: list[int] = []
        while len(picked) < count:
            node = heapq.heappop(self._whole)
            # Skip entries of nodes used since, and repeats (a node pushed each time it emptied).
            if self.free[node] == self.per_node and (not picked or node != picked[-1]):
                picked.append(node)
        return picked

    def _best_fit(self, gpus: int) -> int | None:
        for k in range(gpus, self.per_node + 1):
            if self._buckets[k]:
                return next(iter(self._buckets[k]))
        return None

    def release(self, placement: list[tuple[int, int]]) -> None:
        for node, count in placement:
            self._set(node, self.free[node] + count)

    def fits_back(self, placement: list[tuple[int, int]]) -> bool:
        """Whether a job's previous placement is still free (to undo an unneeded preemption)."""
        return all(self.free[node] >= count for node, count in placement)

    def take(self, placement: list[tuple[int, int]]) -> None:
        for node, count in placement:
            self._set(node, self.free[node] - count)
