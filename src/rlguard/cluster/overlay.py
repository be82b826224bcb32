"""The per-job overlay every workload shares: kind, user estimate, eval cadence, curves, noise.

Job sizes and arrivals come from the paper scenario or a trace; everything else a job needs is
drawn here from one random stream, job after job in a fixed order (kind; eval count; estimate;
loss curve; start score and gain; the RLHF curve and proxy slope, or the SFT/DPO curve; then the
eval and loss noise), so a seed fixes every job whatever the block size. The draws are taken per
job (a job's kind decides what it draws next), but with as few generator calls as the order
allows; curves and observations are then computed for a whole block with numpy, applying
elementwise the operations the curve classes apply to one job. So a block's columns are exactly
what `JobTruth` computes for each job, and `jobs()` rebuilds those objects when a caller wants
them (tests check both, and that the block size changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rlguard.cluster.blocks import JobBlock
from rlguard.cluster.curves import GaoCurve, SaturatingCurve
from rlguard.cluster.jobs import JobKind, JobSpec, JobTruth, RlhfCurve
from rlguard.cluster.scenario import MeasuredPool, ScenarioConfig

KINDS = (JobKind.RLHF, JobKind.LORA_SFT, JobKind.DPO)
KIND_NAMES = tuple(str(k) for k in KINDS)
RLHF, LORA_SFT, DPO = range(3)
LOSS_NOISE = 0.005
"""Std of the relative noise on every observed training loss."""

# Uniform draws, in draw order: (low, high) pairs, shared by all jobs, then per kind.
_COMMON = ("loss_start", "loss_ratio", "loss_tau", "s0", "gain")
_GAO = ("beta", "hacks", "reach", "proxy_slope")
_SATURATING = ("eval_tau",)


@dataclass(frozen=True)
class Overlay:
    """The draws for a block of jobs, one entry per job; NaN where a field does not apply
    (`measured` is -1 for jobs without a measured curve). Noise rows are padded to `width`."""

    kind: np.ndarray
    n_evals: np.ndarray
    estimate_factor: np.ndarray  # the user's estimate over the true duration
    loss_start: np.ndarray
    loss_end: np.ndarray
    loss_tau: np.ndarray
    s0: np.ndarray
    gain: np.ndarray
    beta: np.ndarray
    d_max: np.ndarray
    measured: np.ndarray
    proxy_slope: np.ndarray
    eval_tau: np.ndarray
    eval_noise: np.ndarray
    loss_noise: np.ndarray


def _scaled(u: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """What `rng.uniform(low, high)` returns for the underlying draw u: low + (high - low) u."""
    low, high = bounds
    return low + (high - low) * u


def draw(
    rng: np.random.Generator, cfg: ScenarioConfig, n_jobs: int, pool: MeasuredPool | None
) -> Overlay:
    """Draw the overlay of `n_jobs` jobs, job after job, from `rng`."""
    random, integers, normal = rng.random, rng.integers, rng.standard_normal
    low, high = cfg.evals_per_job
    width, noisy = high, cfg.noise > 0
    kind = np.empty(n_jobs, dtype=np.int64)
    n_evals = np.empty(n_jobs, dtype=np.int64)
    z_estimate = np.empty(n_jobs)
    u = np.full((n_jobs, len(_COMMON) + len(_GAO)), np.nan)
    measured = np.full(n_jobs, -1, dtype=np.int64)
    z = np.empty(n_jobs * width * (2 if noisy else 1))
    curves = {} if pool is None else {id(c): i for i, c in enumerate(pool.hacking + pool.healthy)}
    used = 0
    for j in range(n_jobs):
        c = RLHF if random() < cfg.rlhf_fraction else LORA_SFT if random() < 0.5 else DPO
        kind[j] = c
        m = int(integers(low, high + 1))
        n_evals[j] = m
        z_estimate[j] = normal()
        row = u[j]
        if c != RLHF:
            random(out=row[: len(_COMMON) + len(_SATURATING)])
        elif pool is None:
            random(out=row)
        else:
            random(out=row[: len(_COMMON)])
            measured[j] = curves[id(pool.draw(rng, cfg.hacking_fraction))]
            row[len(_COMMON) + len(_GAO) - 1] = random()
        k = 2 * m if noisy else m
        normal(out=z[used : used + k])
        used += k
    return _assemble(cfg, kind, n_evals, z_estimate, u, measured, z[:used], width, noisy)


def _assemble(
    cfg: ScenarioConfig,
    kind: np.ndarray,
    n_evals: np.ndarray,
    z_estimate: np.ndarray,
    u: np.ndarray,
    measured: np.ndarray,
    z: np.ndarray,
    width: int,
    noisy: bool,
) -> Overlay:
    """Turn the raw draws into the overlay's fields (uniforms scaled to their ranges)."""
    common = dict(zip(_COMMON, u.T, strict=False))
    extra = u[:, len(_COMMON) :]
    rlhf, gao = kind == RLHF, (kind == RLHF) & (measured < 0)
    loss_start = _scaled(common["loss_start"], (1.5, 3.0))
    beta = np.where(gao, _scaled(extra[:, 0], cfg.beta), np.nan)
    d_star = np.exp(cfg.alpha / beta - 1.0)
    hacks = extra[:, 1] < cfg.hacking_fraction
    reach = np.where(
        hacks, _scaled(extra[:, 2], cfg.hacking_reach), _scaled(extra[:, 2], cfg.healthy_reach)
    )
    # The per-job noise draws, laid out in rows: eval noise first (when noisy), then loss noise.
    n = len(kind)
    jobs = np.repeat(np.arange(n), n_evals)
    step = np.arange(len(jobs)) - np.repeat(np.cumsum(n_evals) - n_evals, n_evals)
    per_job = n_evals * (2 if noisy else 1)
    first = np.repeat(np.cumsum(per_job) - per_job, n_evals)
    eval_noise, loss_noise = np.zeros((n, width)), np.zeros((n, width))
    if noisy:
        eval_noise[jobs, step] = 0.0 + cfg.noise * z[first + step]
        first = first + np.repeat(n_evals, n_evals)
    loss_noise[jobs, step] = 0.0 + LOSS_NOISE * z[first + step]
    return Overlay(
        kind=kind,
        n_evals=n_evals,
        estimate_factor=np.exp(0.0 + cfg.estimate_sigma * z_estimate),
        loss_start=loss_start,
        loss_end=loss_start * _scaled(common["loss_ratio"], (0.3, 0.6)),
        loss_tau=_scaled(common["loss_tau"], (0.1, 0.5)),
        s0=_scaled(common["s0"], cfg.start_score),
        gain=_scaled(common["gain"], cfg.peak_gain),
        beta=beta,
        d_max=np.where(gao, reach * d_star, np.nan),
        measured=measured,
        proxy_slope=np.where(rlhf, _scaled(extra[:, 3], (0.5, 1.5)), np.nan),
        eval_tau=np.where(rlhf, np.nan, _scaled(extra[:, 0], (0.15, 0.4))),
        eval_noise=eval_noise,
        loss_noise=loss_noise,
    )


def _saturating(start: np.ndarray, end: np.ndarray, tau: np.ndarray, p: np.ndarray) -> np.ndarray:
    """`SaturatingCurve(start, end, tau)(p)`, one curve per row."""
    return end[:, None] + (start - end)[:, None] * np.exp(-p / tau[:, None])


def _gao(ov: Overlay, alpha: float, p: np.ndarray) -> np.ndarray:
    """`GaoCurve(alpha, beta, d_max, s0, gain)(p)`, one curve per row."""
    beta = ov.beta[:, None]
    r_star = ov.beta * np.exp(alpha / ov.beta - 1.0)
    d = ov.d_max[:, None] * p
    safe = np.where(d > 0, d, 1.0)
    reward = np.where(d > 0, d * (alpha - beta * np.log(safe)), 0.0)
    raw = ov.s0[:, None] + ov.gain[:, None] * reward / r_star[:, None]
    return np.clip(raw, 0.0, 1.0)


def block(
    ov: Overlay,
    cfg: ScenarioConfig,
    pool: MeasuredPool | None,
    *,
    job_ids: list[str],
    gpus: np.ndarray,
    submit_s: np.ndarray,
    duration_s: np.ndarray,
) -> JobBlock:
    """The jobs' columns: their specs and what their evals will observe."""
    width = ov.eval_noise.shape[1]
    p = np.arange(1, width + 1)[None, :] / ov.n_evals[:, None]
    rlhf = ov.kind == RLHF
    gao = rlhf & (ov.measured < 0)
    with np.errstate(invalid="ignore"):  # NaN parameters of the rows a curve does not apply to
        true = np.where(
            gao[:, None],
            _gao(ov, cfg.alpha, p),
            _saturating(ov.s0, ov.s0 + ov.gain, ov.eval_tau, p),
        )
        proxies = np.where(gao[:, None], 0.0 + (ov.proxy_slope * ov.d_max)[:, None] * p, np.nan)
        hacking = gao & (ov.d_max > np.exp(cfg.alpha / ov.beta - 1.0))
    if pool is not None:
        pool_curves = pool.hacking + pool.healthy
        for c in np.unique(ov.measured[ov.measured >= 0]):
            rows = np.flatnonzero(ov.measured == c)
            curve = pool_curves[c]
            true[rows] = curve(p[rows])
            proxies[rows] = curve.proxy_reward(p[rows], ov.proxy_slope[rows, None])
            hacking[rows] = curve.hacks
    losses = _saturating(ov.loss_start, ov.loss_end, ov.loss_tau, p) * (1.0 + ov.loss_noise)
    return JobBlock(
        job_ids=job_ids,
        kinds=[KIND_NAMES[k] for k in ov.kind.tolist()],
        gpus=np.asarray(gpus, dtype=np.int64),
        submit_s=np.asarray(submit_s, dtype=float),
        estimate_s=duration_s * ov.estimate_factor,
        n_evals=ov.n_evals,
        duration_s=np.asarray(duration_s, dtype=float),
        scores=np.clip(true + ov.eval_noise, 0.0, 1.0),
        losses=losses,
        proxies=proxies,
        has_proxy=rlhf,
        true_scores=true,
        hacking=hacking,
    )


def jobs(
    ov: Overlay,
    cfg: ScenarioConfig,
    pool: MeasuredPool | None,
    *,
    job_ids: list[str],
    gpus: np.ndarray,
    submit_s: np.ndarray,
    duration_s: np.ndarray,
) -> list[tuple[JobSpec, JobTruth]]:
    """The same jobs as objects: a `JobSpec` and a `JobTruth` (with its curves) per job."""
    pool_curves = () if pool is None else pool.hacking + pool.healthy
    out = []
    for j, job_id in enumerate(job_ids):
        m, duration = int(ov.n_evals[j]), float(duration_s[j])
        s0, gain = float(ov.s0[j]), float(ov.gain[j])
        slope = None
        curve: RlhfCurve | SaturatingCurve
        if ov.kind[j] == RLHF:
            slope = float(ov.proxy_slope[j])
            if ov.measured[j] >= 0:
                curve = pool_curves[ov.measured[j]]
            else:
                curve = GaoCurve(cfg.alpha, float(ov.beta[j]), ov.d_max[j], s0, gain)
        else:
            curve = SaturatingCurve(s0, s0 + gain, float(ov.eval_tau[j]))
        loss = SaturatingCurve(
            float(ov.loss_start[j]), float(ov.loss_end[j]), float(ov.loss_tau[j])
        )
        truth = JobTruth(
            duration_s=duration,
            eval_curve=curve,
            loss_curve=loss,
            eval_noise=ov.eval_noise[j, :m].copy(),
            loss_noise=ov.loss_noise[j, :m].copy(),
            proxy_slope=slope,
        )
        estimate = duration * float(ov.estimate_factor[j])
        spec = JobSpec(job_id, KINDS[ov.kind[j]], int(gpus[j]), float(submit_s[j]), estimate, m)
        out.append((spec, truth))
    return out
