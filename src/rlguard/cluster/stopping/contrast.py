"""What the trend rules test with: the t of a linear contrast of a least-squares fit, and its
one-sided critical value.

Why one helper: GaoTrend's slope, GaoDrop's fall from the fitted best and its fall after a break
are all c . coef for some vector c of a model fitted by ordinary least squares, with the noise
estimated from the fit's own residuals (no noise level is assumed). Each rule only builds its
design matrix and its contrast.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import stdtrit  # scipy.stats' t.ppf is this; stats costs 1 s to import

NEGLIGIBLE = 1e-9
"""A contrast smaller than this (in score units, scores lie in [0, 1]) is rounding, not a signal."""


def contrast_t(design: np.ndarray, scores: np.ndarray, contrast: np.ndarray) -> float:
    """t statistic of contrast . coef, coef the OLS fit of `scores` on `design`.

    Residual degrees of freedom are rows - columns (the caller ensures at least one). A noise-free
    fit gives a signed infinity; a negligible contrast gives 0.
    """
    coef, *_ = np.linalg.lstsq(design, scores, rcond=None)
    value = float(contrast @ coef)
    if abs(value) <= NEGLIGIBLE:
        return 0.0
    residuals = scores - design @ coef
    sigma2 = float(residuals @ residuals) / (design.shape[0] - design.shape[1])
    variance = float(contrast @ np.linalg.pinv(design.T @ design) @ contrast) * sigma2
    if variance <= 0.0:
        return -np.inf if value < 0 else np.inf
    return value / np.sqrt(variance)


@lru_cache(maxsize=512)
def critical_t(level: float, dof: int) -> float:
    """The one-sided critical value: P(T > t) = level for Student's t with `dof` degrees."""
    return float(stdtrit(dof, 1.0 - level))
