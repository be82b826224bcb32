"""Which generation actor gets which prompt groups. Items are groups: a prompt and its K samples
stay on one actor, so its prompt can be prefilled once.

- `equal_count_split` is verl's: contiguous chunks of equal size, whatever their lengths.
- `length_aware_split` is RLHFless's: groups sorted by predicted length and cut into contiguous
  runs, so similar lengths share an actor. The runs carry equal predicted work, not equal counts:
  an actor of long groups holds fewer of them, so it is not the one that finishes last by a wide
  margin, and the actors finish together as far as the prediction goes. Where the prediction
  errs, the actors whose groups turn out short finish early and are released. Work defaults to the
  predicted length (tokens); `scaling.group_work` gives predicted decode seconds instead, which
  also charge a long sequence for the KV cache it reads at every step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _check(n_items: int, n_actors: int) -> None:
    if n_actors < 1:
        raise ValueError(f"need at least one actor, got {n_actors}")
    if n_items < 0:
        raise ValueError(f"negative item count {n_items}")


def equal_count_split(n_items: int, n_actors: int) -> list[list[int]]:
    """Items 0..n-1 in order, cut into `n_actors` contiguous chunks whose sizes differ by <= 1."""
    _check(n_items, n_actors)
    base, extra = divmod(n_items, n_actors)
    out, start = [], 0
    for i in range(n_actors):
        size = base + (i < extra)
        out.append(list(range(start, start + size)))
        start += size
    return out


def length_aware_split(
    predicted: Sequence[float], n_actors: int, work: Sequence[float] | None = None
) -> list[list[int]]:
    """Items sorted longest first (ties by index), cut where the running sum of `work` (default:
    the predicted lengths) crosses each multiple of total / n_actors; every actor gets at least
    one item while items last. Each actor's list is longest first (its admission order)."""
    lengths = np.asarray(predicted, dtype=float)
    _check(len(lengths), n_actors)
    weights = lengths if work is None else np.asarray(work, dtype=float)
    if weights.shape != lengths.shape:
        raise ValueError(f"work has {weights.size} entries for {lengths.size} items")
    if (lengths < 0).any() or (weights < 0).any():
        raise ValueError("predicted lengths and work must be non-negative")
    order = np.argsort(-lengths, kind="stable")
    cumulative = np.cumsum(weights[order])
    total = cumulative[-1] if len(order) else 0.0
    out, start = [], 0
    for i in range(n_actors):
        left, actors_left = len(order) - start, n_actors - i
        if actors_left == 1:
            end = len(order)
        else:
            target = total * (i + 1) / n_actors - 1e-9 * total  # tolerate rounding in the sum
            end = int(np.searchsorted(cumulative, target)) + 1
            end = min(end, len(order) - (actors_left - 1))  # leave one for each later actor
            end = max(end, start + min(1, left))
        out.append([int(x) for x in order[start:end]])
        start = end
    return out
