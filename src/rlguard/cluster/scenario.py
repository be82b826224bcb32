"""A simulated platform's scenario: the knobs of a workload (`ScenarioConfig`) and the measured
curves it may replay (`MeasuredPool`), shared by the paper generator (workload.py), trace replay
(traces.py) and the per-job overlay both draw from (overlay.py).

Every modelling choice here is documented, with its source or reasoning, in docs/cluster.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import MeasuredCurve
from rlguard.errors import InputError

Range = tuple[float, float]


class ScenarioConfig(BaseModel):
    """Knobs of a simulated platform workload; defaults are the "paper" scenario."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: int = Field(64, gt=0, description="cluster GPUs (nodes of 8)")
    n_jobs: int = Field(400, gt=0)
    load: float = Field(0.9, gt=0, description="offered load: GPU-seconds asked / GPU-seconds had")
    rlhf_fraction: float = Field(0.8, ge=0, le=1)
    hacking_fraction: float = Field(0.5, ge=0, le=1, description="share of RLHF runs that hack")
    noise: float = Field(0.01, ge=0, description="std of Gaussian eval-score noise")
    estimate_sigma: float = Field(0.5, ge=0, description="lognormal sigma of user estimates")
    evals_per_job: tuple[int, int] = (10, 16)
    alpha: float = Field(0.35, gt=0, description="Gao alpha_RL (held constant across RM sizes)")
    beta: Range = (0.118, 0.175)
    hacking_reach: Range = (2.5, 4.0)
    healthy_reach: Range = (0.2, 0.6)
    start_score: Range = (0.3, 0.5)
    peak_gain: Range = (0.2, 0.4)
    curves: str | None = Field(None, description="curve file RLHF jobs replay (rlguard-curves/1)")

    @field_validator("gpus")
    @classmethod
    def _whole_nodes(cls, gpus: int) -> int:
        if gpus > 8 and gpus % 8:
            raise ValueError("must be a multiple of 8 (nodes of 8 GPUs)")
        return gpus

    @model_validator(mode="after")
    def _ranges_ordered(self) -> ScenarioConfig:
        for name in (
            "evals_per_job",
            "beta",
            "hacking_reach",
            "healthy_reach",
            "start_score",
            "peak_gain",
        ):
            lo, hi = getattr(self, name)
            if not 0 < lo <= hi:
                raise ValueError(f"{name} must satisfy 0 < low <= high, got ({lo}, {hi})")
        if self.hacking_reach[0] <= 1.0 or self.healthy_reach[1] > 1.0:
            raise ValueError("hacking_reach must lie above 1 and healthy_reach at or below 1")
        return self


@dataclass(frozen=True)
class MeasuredPool:
    """A curve file's curves split by label, so that the hacking fraction still sets the mix.

    The file's own mix reflects which methods and seeds the lab ran, not a platform's workload.
    """

    path: str
    source: str
    hacking: tuple[MeasuredCurve, ...]
    healthy: tuple[MeasuredCurve, ...]

    def require(self, hacking_fraction: float) -> None:
        """Fail unless the file holds every kind of curve this fraction draws."""
        for kind, curves, drawn in (
            ("hacking", self.hacking, hacking_fraction > 0),
            ("healthy", self.healthy, hacking_fraction < 1),
        ):
            if drawn and not curves:
                raise InputError(
                    f"{self.path}: no {kind} curves, but a hacking fraction of "
                    f"{hacking_fraction} draws some"
                )

    def draw(self, rng: np.random.Generator, hacking_fraction: float) -> MeasuredCurve:
        """A hacking curve w.p. `hacking_fraction`, else a healthy one; uniform within the kind."""
        kind = self.hacking if rng.random() < hacking_fraction else self.healthy
        return kind[int(rng.integers(len(kind)))]


def measured_pool(cfg: ScenarioConfig) -> MeasuredPool | None:
    """The scenario's curve file as a pool (None without one), checked against its fraction."""
    if cfg.curves is None:
        return None
    read = read_curves(cfg.curves)
    pool = MeasuredPool(
        cfg.curves,
        read.source,
        tuple(c for c in read.curves if c.hacks),
        tuple(c for c in read.curves if not c.hacks),
    )
    pool.require(cfg.hacking_fraction)
    return pool
