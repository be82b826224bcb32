"""The generation plan the simulator and the real serverless executor share, component by
component, what `idle_rejoin` changes in it, and what each ablation switches off."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

from policy_profile import PROFILE

from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.policies.components import (
    ABLATIONS,
    SIMULATED_ABLATIONS,
    Components,
    plan_generation,
)
from rlguard.runtime.policies.pricing import Prices

PREDICTED = [100, 90, 80, 50, 40, 30, 20, 10]  # already sorted: longest first is index order


def plan(parts: Components, lam: float = 0.5, idle_rejoin: bool = False) -> list[list[int]]:
    return plan_generation(
        parts,
        PREDICTED,
        2,
        PROFILE,
        Prices(),
        lam,
        most=4,
        warm=4,
        prompt_tokens=0.0,
        idle_rejoin=idle_rejoin,
    )


def test_without_scaling_every_worker_generates_and_without_assignment_counts_are_equal() -> None:
    assert plan(Components(scaling=False, assign=False)) == equal_count_split(len(PREDICTED), 4)
    by_work = plan(Components(scaling=False))
    assert len(by_work) == 4 and sorted(i for chunk in by_work for i in chunk) == list(range(8))
    # runs of equal predicted work: the actor of the longest groups holds the fewest
    assert len(by_work[0]) < len(by_work[-1])
    assert all(max(a) < min(b) for a, b in pairwise(by_work))


def test_left_out_workers_cost_only_when_they_must_rejoin() -> None:
    # cheapest (lam 0): one actor decodes everything unless the three warm workers it leaves out
    # must come back to score and train (the simulator's colocated workers), which costs them
    # their idle time or a cold start; the real executor's released functions need not
    assert len(plan(Components(), lam=0.0, idle_rejoin=False)) == 1
    assert len(plan(Components(), lam=0.0, idle_rejoin=True)) == 4


def test_each_ablation_switches_off_exactly_its_component() -> None:
    # the real bench ablates the shared four; only the simulator models overlap
    assert set(ABLATIONS) == {"no-dedup", "no-assign", "no-scaling", "no-migrate"}
    assert {**ABLATIONS, "no-overlap": Components(overlap=False)} == SIMULATED_ABLATIONS
    for name, parts in SIMULATED_ABLATIONS.items():
        off = [f.name for f in dataclasses.fields(parts) if not getattr(parts, f.name)]
        assert [f"no-{field}" for field in off] == [name]
