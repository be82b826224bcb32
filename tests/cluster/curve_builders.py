"""Small measured-curve sets for tests: hacking and healthy runs with their own measurement noise.

Shapes follow Gao's RL form (the curves a real run gives): a hacking run reaches 3x past its peak
(peaks at a third of the run, then loses most of its gain), a healthy one stops at half its peak
distance (still rising). Each is sampled at 21 progress points with a little eval noise, labelled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rlguard.cluster.curve_file import write_curves
from rlguard.cluster.curves import GaoCurve, MeasuredCurve

PROGRESS = np.linspace(0.0, 1.0, 21)


def measured(name: str, *, hacking: bool, seed: int, noise: float = 0.003) -> MeasuredCurve:
    rng = np.random.default_rng(seed)
    alpha, beta = 0.35, rng.uniform(0.12, 0.17)
    d_star = np.exp(alpha / beta - 1.0)
    reach = 3.0 if hacking else 0.5
    gao = GaoCurve(alpha, beta, reach * d_star, rng.uniform(0.3, 0.5), rng.uniform(0.2, 0.4))
    score = np.clip(gao(PROGRESS) + rng.normal(0.0, noise, PROGRESS.size), 0.0, 1.0)
    return MeasuredCurve(
        name=name,
        method="ppo" if hacking else "crpg",
        seed=seed,
        progress=PROGRESS,
        score=score,
        proxy=gao.proxy_reward(PROGRESS, 1.0),
        kl=(gao.d_max * PROGRESS) ** 2,
        hacking=hacking,
    )


def mixed_curves(n_hacking: int = 3, n_healthy: int = 3) -> list[MeasuredCurve]:
    hacking = [measured(f"ppo/seed{i}", hacking=True, seed=i) for i in range(n_hacking)]
    healthy = [measured(f"crpg/seed{i}", hacking=False, seed=100 + i) for i in range(n_healthy)]
    return hacking + healthy


def write_mixed(path: Path, n_hacking: int = 3, n_healthy: int = 3) -> Path:
    write_curves(path, mixed_curves(n_hacking, n_healthy), source="tests: Gao-shaped runs")
    return path
