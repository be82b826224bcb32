"""Workloads: the "paper" scenario generator and the per-job overlay shared with trace replay.

Every modelling choice here is documented, with its source or reasoning, in docs/cluster.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import GaoCurve, MeasuredCurve, SaturatingCurve
from rlguard.cluster.jobs import JobKind, JobSpec, JobTruth, RlhfCurve, Workload
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


def sample_kind(rng: np.random.Generator, rlhf_fraction: float) -> JobKind:
    if rng.random() < rlhf_fraction:
        return JobKind.RLHF
    return JobKind.LORA_SFT if rng.random() < 0.5 else JobKind.DPO


def gao_curve(rng: np.random.Generator, cfg: ScenarioConfig, s0: float, gain: float) -> GaoCurve:
    """A synthetic RLHF curve: hacking w.p. `hacking_fraction`, reaching past its peak if so."""
    beta = rng.uniform(*cfg.beta)
    d_star = np.exp(cfg.alpha / beta - 1.0)
    hacks = rng.random() < cfg.hacking_fraction
    reach = rng.uniform(*(cfg.hacking_reach if hacks else cfg.healthy_reach))
    return GaoCurve(cfg.alpha, beta, reach * d_star, s0, gain)


def make_job(
    rng: np.random.Generator,
    cfg: ScenarioConfig,
    *,
    job_id: str,
    kind: JobKind,
    gpus: int,
    submit_s: float,
    duration_s: float,
    measured: MeasuredPool | None = None,
) -> tuple[JobSpec, JobTruth]:
    """Overlay a job's estimate, eval cadence and curves on its size and arrival.

    An RLHF job replays a curve from `measured` when given, else follows a Gao curve.
    """
    n_evals = int(rng.integers(cfg.evals_per_job[0], cfg.evals_per_job[1] + 1))
    estimate = duration_s * float(np.exp(rng.normal(0.0, cfg.estimate_sigma)))
    loss_start = rng.uniform(1.5, 3.0)
    loss = SaturatingCurve(loss_start, loss_start * rng.uniform(0.3, 0.6), rng.uniform(0.1, 0.5))
    s0, gain = rng.uniform(*cfg.start_score), rng.uniform(*cfg.peak_gain)
    proxy_slope = None
    if kind is JobKind.RLHF:
        if measured is None:
            curve: RlhfCurve | SaturatingCurve = gao_curve(rng, cfg, s0, gain)
        else:
            curve = measured.draw(rng, cfg.hacking_fraction)
        proxy_slope = rng.uniform(0.5, 1.5)
    else:
        curve = SaturatingCurve(s0, s0 + gain, rng.uniform(0.15, 0.4))
    truth = JobTruth(
        duration_s=duration_s,
        eval_curve=curve,
        loss_curve=loss,
        eval_noise=rng.normal(0.0, cfg.noise, n_evals) if cfg.noise else np.zeros(n_evals),
        loss_noise=rng.normal(0.0, 0.005, n_evals),
        proxy_slope=proxy_slope,
    )
    spec = JobSpec(job_id, kind, gpus, submit_s, estimate, n_evals)
    return spec, truth


def philly_sizes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """GPU counts and durations (s): 60 * 10^U(1.5, 3) w.p. 0.8, else 60 * 10^U(3, 4)."""
    gpus = rng.choice(PHILLY_GPUS, p=PHILLY_GPU_P, size=n)
    long = rng.random(n) >= 0.8
    exponent = np.where(long, rng.uniform(3.0, 4.0, n), rng.uniform(1.5, 3.0, n))
    return gpus, 60.0 * 10.0**exponent


def paper_workload(cfg: ScenarioConfig, seed: int) -> Workload:
    """The paper's platform: Philly-like sizes, Poisson arrivals at the offered load."""
    rng = np.random.default_rng(seed)
    gpus, duration = philly_sizes(rng, cfg.n_jobs)
    gpus = np.minimum(gpus, cfg.gpus)
    rate = cfg.load * cfg.gpus / float(np.mean(gpus * duration))
    gaps = rng.exponential(1.0 / rate, cfg.n_jobs)
    submit = np.cumsum(gaps) - gaps[0]
    measured = measured_pool(cfg)
    specs, truths = [], []
    for i in range(cfg.n_jobs):
        spec, truth = make_job(
            rng,
            cfg,
            job_id=f"job-{i}",
            kind=sample_kind(rng, cfg.rlhf_fraction),
            gpus=int(gpus[i]),
            submit_s=float(submit[i]),
            duration_s=float(duration[i]),
            measured=measured,
        )
        specs.append(spec)
        truths.append(truth)
    return Workload(specs, truths, name=f"paper-seed{seed}")
