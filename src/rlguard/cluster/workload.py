"""Workloads: the "paper" scenario generator (materialized or streamed) and its knobs.

Per-job overlays (kinds, estimates, curves, noise) are drawn by rlguard.cluster.overlay, shared
with trace replay.

Every modelling choice here is documented, with its source or reasoning, in docs/cluster.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlguard.cluster import overlay
from rlguard.cluster.blocks import JobStream
from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import MeasuredCurve
from rlguard.cluster.jobs import Workload
from rlguard.errors import InputError

Range = tuple[float, float]

# Philly-derived sizes used by public simulators (Gavel): REFERENCE.md section 3.
PHILLY_GPUS = (1, 2, 4, 8)
PHILLY_GPU_P = (0.70, 0.10, 0.15, 0.05)


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


def philly_sizes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """GPU counts and durations (s): 60 * 10^U(1.5, 3) w.p. 0.8, else 60 * 10^U(3, 4)."""
    gpus = rng.choice(PHILLY_GPUS, p=PHILLY_GPU_P, size=n)
    long = rng.random(n) >= 0.8
    exponent = np.where(long, rng.uniform(3.0, 4.0, n), rng.uniform(1.5, 3.0, n))
    return gpus, 60.0 * 10.0**exponent


def _paper_jobs(
    cfg: ScenarioConfig, seed: int, pool: MeasuredPool | None, block: int
) -> Iterator[tuple[overlay.Overlay, dict]]:
    """The paper scenario, a block at a time: each block's overlay and its sizes and arrivals."""
    rng = np.random.default_rng(seed)
    gpus, duration = philly_sizes(rng, cfg.n_jobs)
    gpus = np.minimum(gpus, cfg.gpus)
    rate = cfg.load * cfg.gpus / float(np.mean(gpus * duration))
    gaps = rng.exponential(1.0 / rate, cfg.n_jobs)
    submit = np.cumsum(gaps) - gaps[0]
    for lo in range(0, cfg.n_jobs, block):
        hi = min(lo + block, cfg.n_jobs)
        columns = {
            "job_ids": [f"job-{i}" for i in range(lo, hi)],
            "gpus": gpus[lo:hi],
            "submit_s": submit[lo:hi],
            "duration_s": duration[lo:hi],
        }
        yield overlay.draw(rng, cfg, hi - lo, pool), columns


def paper_stream(cfg: ScenarioConfig, seed: int, block: int = 4096) -> JobStream:
    """The paper's platform as a stream of `block`-job blocks, generated as the engine pulls them.

    The same jobs as `paper_workload(cfg, seed)`, whatever the block size.
    """
    pool = measured_pool(cfg)
    blocks = (
        overlay.block(ov, cfg, pool, **columns)
        for ov, columns in _paper_jobs(cfg, seed, pool, block)
    )
    return JobStream(blocks, cfg.n_jobs, cfg.evals_per_job[1], name=f"paper-seed{seed}")


def paper_workload(cfg: ScenarioConfig, seed: int) -> Workload:
    """The paper's platform: Philly-like sizes, Poisson arrivals at the offered load."""
    pool = measured_pool(cfg)
    jobs = [
        job
        for ov, columns in _paper_jobs(cfg, seed, pool, block=4096)
        for job in overlay.jobs(ov, cfg, pool, **columns)
    ]
    return Workload(
        [spec for spec, _ in jobs], [truth for _, truth in jobs], name=f"paper-seed{seed}"
    )
