"""One timed, streamed simulation of a large workload: what `rlguard bench simulate` measures.

End to end: generating (or reading) the jobs, simulating them and scoring the run, with jobs
streamed in blocks so a million of them never exist as Python objects at once. Peak memory is
the process's peak resident set (`ru_maxrss`), so it is only clean in a fresh process.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from rlguard.cluster.blocks import JobBlock, JobStream
from rlguard.cluster.engine import Engine
from rlguard.cluster.metrics import HOUR, summarize
from rlguard.cluster.registry import BASES, RULES, RuleParams
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.traces import trace_stream
from rlguard.cluster.workload import paper_stream

SUMMARY_KEYS = ("jct_mean_h", "jct_p95_h", "gpu_util", "precision", "recall", "preemptions")


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def _counted(blocks: Iterator[JobBlock], done: Callable[[int], None]) -> Iterator[JobBlock]:
    for block in blocks:
        yield block
        done(len(block))


def timed_run(
    cfg: ScenarioConfig,
    *,
    base: str,
    rule: str,
    seed: int = 0,
    trace: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, object]:
    """Simulate `base` with `rule` on the paper scenario (or `trace`) once; times and outcomes.

    `progress`, when given, is told how many jobs each block the engine pulls in holds.
    """
    started = time.perf_counter()
    stream: JobStream = (
        trace_stream(trace, cfg, seed, gpus=cfg.gpus) if trace else paper_stream(cfg, seed)
    )
    if progress is not None:
        stream = replace(stream, blocks=_counted(iter(stream.blocks), progress))
    scheduler = Scheduler(BASES[base](), RULES[rule](RuleParams()))
    result = Engine(stream, scheduler, gpus=cfg.gpus).run()
    scores = summarize(result)
    wall = time.perf_counter() - started
    wait = result.finish_s - result.submit_s - result.executed_s  # time queued, in total
    waited = wait > 1e-6
    return {
        "jobs": stream.n_jobs,
        "gpus": cfg.gpus,
        "load": None if trace else cfg.load,
        "trace": trace,
        "base": base,
        "rule": rule,
        "seed": seed,
        "wall_s": round(wall, 3),
        "jobs_per_s": round(stream.n_jobs / wall, 1),
        "events": result.events,
        "events_per_s": round(result.events / wall, 1),
        "policy_passes": result.policy_passes,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "queue": {
            "jobs_waited": round(float(waited.mean()), 4),
            "wait_mean_min": round(float(wait.mean()) * 60 / HOUR, 2),
            "wait_mean_of_waiting_min": round(float(wait[waited].mean()) * 60 / HOUR, 2)
            if waited.any()
            else 0.0,
            "wait_p99_min": round(float(np.percentile(wait, 99)) * 60 / HOUR, 2),
        },
        **{k: scores[k] for k in SUMMARY_KEYS},
    }
