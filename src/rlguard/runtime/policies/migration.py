"""Cut-and-migrate (RLHFless): when an actor has finished a fraction tau of its sequences, its
long tail moves to actors with free slots, so it can be released instead of decoding a handful of
sequences at the cost of a whole GPU. A moved sequence keeps its tokens and is resumed (its
prompt and tokens prefilled again) on the target.
"""

from __future__ import annotations

from rlguard.errors import InputError


def check_tau(tau: float) -> float:
    if not 0 < tau <= 1:
        raise InputError(f"tau must be in (0, 1], got {tau}")
    return tau


def should_cut(finished: int, total: int, tau: float) -> bool:
    """True once `finished` reaches tau * `total` while sequences remain (tau = 1: never)."""
    check_tau(tau)
    if not 0 <= finished <= total:
        raise ValueError(f"finished must lie in [0, total], got {finished} of {total}")
    return finished < total and finished >= tau * total


def plan_moves(
    remaining: dict[int, list[int]], free_slots: dict[int, int]
) -> list[tuple[int, int, int]]:
    """(seq_id, from_actor, to_actor) for as many remaining sequences as the free slots hold.

    Each sequence goes to the target with the most free slots left (ties: lowest actor id), which
    spreads the tail instead of piling it on one actor; an actor never receives its own sequences.
    """
    slots = {a: n for a, n in free_slots.items() if n > 0}
    moves = []
    for source in sorted(remaining):
        for seq in remaining[source]:
            targets = [a for a in slots if a != source and slots[a] > 0]
            if not targets:
                break
            target = min(targets, key=lambda a: (-slots[a], a))
            slots[target] -= 1
            moves.append((seq, source, target))
    return moves
