"""GaoDrop on curves the lab measured: it stops the PPO runs the other rules miss (one fell and
stayed down, one crashed and crept back up), and at most one CGPO run, which did fall.

tests/cluster/data/lab_quick_curves.json is the curves.json of `rlguard lab overoptimization
--quick --seeds 4` (PPO, CRPG and CRRAFT, 4 seeds, 9 evals each; 3 PPO runs labelled hacking);
lab_full_curves.json the full lab's (5 methods x 5 seeds, 11 evals each; every PPO and GRPO run
and CODPO seed 0 labelled hacking). GaoDrop's parameters were fixed on synthetic tuning seeds
before either file existed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import MeasuredCurve
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.stopping.evalstop import EvalStop
from rlguard.cluster.stopping.gao_drop import GaoDrop
from rlguard.cluster.stopping.gao_trend import GaoTrend

DATA = Path(__file__).parents[1] / "data"
CURVES = {c.name: c for c in read_curves(DATA / "lab_quick_curves.json").curves}
FULL = {c.name: c for c in read_curves(DATA / "lab_full_curves.json").curves}
CGPO = [name for name, c in CURVES.items() if c.method in ("crpg", "crraft", "codpo")]


def stops(rule: StopRule, progress, scores) -> bool:
    """Whether the rule flags the run: stops it, or would at its last eval (where a stop saves
    nothing, so the rule's verdict is only its reason)."""
    decisions = (
        rule.observe(EvalEvent("run", "rlhf", i, float(p), float(s), 0.0))
        for i, (p, s) in enumerate(zip(progress, scores, strict=True))
    )
    return any(d.flagged for d in decisions)


def as_simulated(curve: MeasuredCurve, n: int) -> tuple[np.ndarray, np.ndarray]:
    """What a simulated job with n evals shows its rule: progress i / n, all but the last."""
    progress = np.arange(1, n) / n
    return progress, curve(progress)


def test_the_file_holds_what_the_docstring_says() -> None:
    assert len(CURVES) == 12 and len(CGPO) == 8
    assert sorted(n for n, c in CURVES.items() if c.hacks) == [
        "ppo/seed0",
        "ppo/seed1",
        "ppo/seed2",
    ]


def test_as_measured_only_gao_drop_stops_ppo_seed2() -> None:
    # 0.445, peaks at 0.495 at its second eval, falls to 0.419 by its fifth, wanders 0.40-0.44
    curve = CURVES["ppo/seed2"]
    assert stops(GaoDrop(), curve.progress, curve.score)
    assert not stops(GaoTrend(), curve.progress, curve.score)
    assert not stops(EvalStop(k=2, min_delta=0.01), curve.progress, curve.score)


@pytest.mark.parametrize("name", CGPO)
def test_never_stops_a_cgpo_run(name: str) -> None:
    curve = CURVES[name]
    assert not stops(GaoDrop(), curve.progress, curve.score)
    for n in range(10, 17):
        assert not stops(GaoDrop(), *as_simulated(curve, n))


def test_stops_ppo_seed2_at_every_simulated_cadence() -> None:
    curve = CURVES["ppo/seed2"]
    assert all(stops(GaoDrop(), *as_simulated(curve, n)) for n in range(10, 17))


def test_the_full_file_holds_what_the_docstring_says() -> None:
    assert len(FULL) == 25
    hacking = {name for name, c in FULL.items() if c.hacks}
    assert hacking == {n for n, c in FULL.items() if c.method in ("ppo", "grpo")} | {"codpo/seed0"}


def test_stops_the_full_labs_crash_and_creep_run_that_evalstop_misses() -> None:
    # 0.409, up to 0.518 at eval 3, down to 0.430 at eval 5, back to 0.453 at eval 9, 0.422 last
    curve = FULL["ppo/seed2"]
    assert stops(GaoDrop(), curve.progress, curve.score)
    assert not stops(EvalStop(k=3, min_delta=0.01), curve.progress, curve.score)


def test_on_the_full_lab_stops_every_ppo_and_grpo_run_and_one_fallen_cgpo_run() -> None:
    stopped = {name for name, c in FULL.items() if stops(GaoDrop(), c.progress, c.score)}
    ppo_grpo = {name for name, c in FULL.items() if c.method in ("ppo", "grpo")}
    # crraft/seed3 fell from 0.544 (eval 3) to 0.482 (eval 7) below the checkpoint it had
    assert stopped == ppo_grpo | {"crraft/seed3"}
