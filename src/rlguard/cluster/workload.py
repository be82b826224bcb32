"""Workloads: the "paper" scenario generator (materialized or streamed); its knobs are
rlguard.cluster.scenario's.

Per-job overlays (kinds, estimates, curves, noise) are drawn by rlguard.cluster.overlay, shared
with trace replay.

Every modelling choice here is documented, with its source or reasoning, in docs/cluster.md.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from rlguard.cluster import overlay
from rlguard.cluster.blocks import JobStream
from rlguard.cluster.jobs import Workload
from rlguard.cluster.scenario import MeasuredPool, ScenarioConfig, measured_pool

# Philly-derived sizes used by public simulators (Gavel): REFERENCE.md section 3.
PHILLY_GPUS = (1, 2, 4, 8)
PHILLY_GPU_P = (0.70, 0.10, 0.15, 0.05)


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
