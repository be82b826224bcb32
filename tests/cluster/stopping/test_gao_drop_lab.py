"""GaoDrop on curves the lab measured: it stops the PPO run the other rules miss, and no CGPO run.

tests/cluster/data/lab_quick_curves.json is the curves.json of `rlguard lab overoptimization
--quick --seeds 4` (PPO, CRPG and CRRAFT, 4 seeds, 9 evals each; 3 PPO runs labelled hacking).
GaoDrop's parameters were fixed on synthetic tuning seeds before this file existed.
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

CURVES = {
    c.name: c
    for c in read_curves(Path(__file__).parents[1] / "data" / "lab_quick_curves.json").curves
}
CGPO = [name for name, c in CURVES.items() if c.method in ("crpg", "crraft", "codpo")]


def stops(rule: StopRule, progress, scores) -> bool:
    return any(
        rule.observe(EvalEvent("run", "rlhf", i, float(p), float(s), 0.0)).stop
        for i, (p, s) in enumerate(zip(progress, scores, strict=True))
    )


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
