"""Per-prompt response-length prediction (RLHFless): an EWMA of each prompt's mean sample length.

Samples of one prompt have correlated lengths and a prompt recurs every epoch, so its own history
is the best cheap predictor. A prompt never seen gets the mean prediction over the prompts seen so
far, or `default` before any data.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class LengthPredictor:
    def __init__(self, alpha: float = 0.5, default: float = 256.0) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        if default <= 0:
            raise ValueError(f"default must be positive, got {default}")
        self.alpha = alpha
        self.default = default
        self._ewma: dict[str, float] = {}
        self._total = 0.0  # sum of self._ewma's values, kept for the fallback

    def fallback(self) -> float:
        return self._total / len(self._ewma) if self._ewma else self.default

    def predict(self, keys: Sequence[str]) -> np.ndarray:
        fallback = self.fallback()
        return np.array([self._ewma.get(k, fallback) for k in keys], dtype=float)

    def update(self, key: str, lengths: Sequence[int]) -> None:
        if len(lengths) == 0:
            raise ValueError(f"no lengths observed for prompt {key!r}")
        mean = float(np.mean(lengths))
        old = self._ewma.get(key)
        new = mean if old is None else self.alpha * mean + (1 - self.alpha) * old
        self._total += new - (old or 0.0)
        self._ewma[key] = new
