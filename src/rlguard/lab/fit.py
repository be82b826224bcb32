"""Gao et al.'s RL overoptimization form, fitted to a run's gold curve.

R(d) = d (alpha - beta ln d), with d = sqrt(KL(pi || pi_init)) and R the gold gain over the start
(R(0) = 0). The form is linear in (alpha, beta), so ordinary least squares fits it exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GaoFit:
    alpha: float
    beta: float
    r2: float

    @property
    def d_star(self) -> float:
        """Where the fitted gold peaks: exp(alpha / beta - 1) (infinite when beta <= 0)."""
        return float(np.exp(self.alpha / self.beta - 1.0)) if self.beta > 0 else float("inf")


def fit_gao(kl: Sequence[float], gold: Sequence[float]) -> GaoFit:
    """Fit gold - gold[0] against d = sqrt(KL); R^2 is over the gains (1 - SS_res / SS_tot)."""
    d = np.sqrt(np.clip(np.asarray(kl, dtype=float), 0.0, None))
    gain = np.asarray(gold, dtype=float) - gold[0]
    d_log_d = d * np.log(np.where(d > 0, d, 1.0))
    design = np.column_stack([d, -d_log_d])
    (alpha, beta), *_ = np.linalg.lstsq(design, gain, rcond=None)
    residual = gain - design @ np.array([alpha, beta])
    total = float(((gain - gain.mean()) ** 2).sum())
    r2 = 1.0 - float(residual @ residual) / total if total > 0 else 0.0
    return GaoFit(float(alpha), float(beta), r2)
