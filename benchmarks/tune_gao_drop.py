"""How GaoDrop's parameters were chosen: a grid on tuning seeds only, the choice rule fixed below.

Detection does not depend on scheduling (a rule sees each RLHF job's own evals, all but the last,
as the engine shows them), so this scores rules on the paper workload's RLHF jobs directly, with
the simulator's metrics: precision, recall and F1 per seed, then the mean over seeds. The t
statistics of every eval are computed once with GaoDrop's own functions; a grid point is then
only a threshold. The chosen point is replayed through the `GaoDrop` class as a check.

Choice rule: among grid points with, at noise 0.05, precision >= 0.993 and recall >= 0.975 (the
targets 0.99 / 0.97 plus a margin for unseen seeds) and an F1 at least EvalStop's at every noise
level, take the one that stops the most runs of a crash family (below) at noise 0.05, then the
best F1 at noise 0.05, then the smallest warm-up.

The crash family (`crash_jobs`) is runs that do not follow Gao's form: a linear rise from s0 by
`gain` (the paper scenario's ranges) to a peak at progress U(0.25, 0.5), a crash within one eval
interval that gives back U(0.6, 1.0) of the gain, then a linear creep back up by U(0.1, 0.3) of
the crash by the end; 10-16 evals; 50 runs per tuning seed. It models the crash docs/lab.md
describes in words (a PPO seed: 0.518, down to 0.43, back to 0.45); no lab curve was read to
build it or to choose a parameter: the lab's curves are a test set.

    python benchmarks/tune_gao_drop.py --out benchmarks/results/gao_drop_tuning.json
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.jobs import JobKind
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.stopping.evalstop import EvalStop
from rlguard.cluster.stopping.gao_drop import GaoDrop, break_drop_t, trend_drop_t
from rlguard.cluster.stopping.gao_trend import GaoTrend
from rlguard.cluster.workload import paper_workload
from rlguard.io import write_json

TUNING_SEEDS = range(5000, 5040)
NOISES = (0.0, 0.01, 0.02, 0.05, 0.1)  # the noise sweep's defaults
ALPHAS = (0.005, 0.01, 0.02, 0.05)
BREAK_ALPHAS = (0.0005, 0.001, 0.002, 0.005, 0.01)
WARMUPS = (6, 7, 8, 9)
AFTER_BEST = (2, 3, 4)
MIN_PRECISION, MIN_RECALL = 0.993, 0.975


@dataclass(frozen=True)
class Job:
    seed: int
    hacking: bool
    progress: np.ndarray
    scores: np.ndarray


def rlhf_jobs(noise: float) -> list[Job]:
    """Every RLHF job of the tuning seeds, with the evals a rule sees (all but the last)."""
    jobs = []
    for seed in TUNING_SEEDS:
        workload = paper_workload(ScenarioConfig(noise=noise), seed)
        for spec, truth in zip(workload.specs, workload.truths, strict=True):
            if spec.kind is JobKind.RLHF:
                visible = slice(0, len(truth.eval_points) - 1)
                jobs.append(
                    Job(
                        seed,
                        truth.hacking,
                        truth.eval_points[visible],
                        truth.observed_scores[visible],
                    )
                )
    return jobs


def scores(stopped: Iterator[tuple[Job, bool]]) -> dict[str, float]:
    """Means over seeds of per-seed precision, recall and F1, as `metrics.summarize` counts."""
    counts: dict[int, list[int]] = {}
    for job, stop in stopped:
        c = counts.setdefault(job.seed, [0, 0, 0])  # tp, fp, fn
        c[0] += stop and job.hacking
        c[1] += stop and not job.hacking
        c[2] += job.hacking and not stop
    tps = [(tp, fp, fn) for tp, fp, fn in counts.values()]
    return {
        "precision": float(np.mean([tp / (tp + fp) for tp, fp, _ in tps if tp + fp])),
        "recall": float(np.mean([tp / (tp + fn) for tp, _, fn in tps if tp + fn])),
        "f1": float(np.mean([2 * tp / (2 * tp + fp + fn) for tp, fp, fn in tps if tp + fp + fn])),
    }


def replay(jobs: list[Job], make_rule: Callable[[], StopRule]) -> dict[str, float]:
    """Feed each job's evals to a fresh rule per seed, as the engine does."""

    def stopped() -> Iterator[tuple[Job, bool]]:
        rules: dict[int, StopRule] = {}
        for i, job in enumerate(jobs):
            rule = rules.setdefault(job.seed, make_rule())
            events = (
                EvalEvent(f"job-{i}", "rlhf", k + 1, float(p), float(s), 1.0)
                for k, (p, s) in enumerate(zip(job.progress, job.scores, strict=True))
            )
            yield job, any(rule.observe(event).stop for event in events)

    return scores(stopped())


def statistics(jobs: list[Job]) -> dict[str, np.ndarray]:
    """Jobs x evals seen (column n - 1 after n evals; padded past a job's end): the trend and
    break t statistics, and how many evals each column has seen."""
    width = max(len(job.scores) for job in jobs)
    out = {"trend": np.full((len(jobs), width), np.inf)}
    out.update({f"break{m}": np.zeros((len(jobs), width)) for m in AFTER_BEST})
    for i, job in enumerate(jobs):
        for k in range(5, len(job.scores) + 1):
            p, s = job.progress[:k], job.scores[:k]
            out["trend"][i, k - 1] = trend_drop_t(p, s)
            for m in AFTER_BEST:
                out[f"break{m}"][i, k - 1] = break_drop_t(p, s, m)
    out["seen"] = np.arange(1, width + 1)
    return out


def critical(level: float, dof: np.ndarray) -> np.ndarray:
    return stats.t.ppf(1 - level, np.maximum(dof, 1))


def grid_scores(jobs: list[Job], st: dict[str, np.ndarray]) -> list[dict]:
    seen = st["seen"]
    rows = []
    for alpha, break_alpha, warmup, after_best in itertools.product(
        ALPHAS, BREAK_ALPHAS, WARMUPS, AFTER_BEST
    ):
        if warmup < after_best + 3:
            continue
        trend = st["trend"] < -critical(alpha, seen - 3)
        brk = st[f"break{after_best}"] < -critical(break_alpha, seen - 4)
        stop = np.any((seen >= warmup) & (trend | brk), axis=1)
        params = {"alpha": alpha, "break_alpha": break_alpha, "warmup": warmup}
        stopped = zip(jobs, stop.tolist(), strict=True)
        rows.append({**params, "after_best": after_best, **scores(stopped)})
    return rows


def crash_jobs(noise: float, per_seed: int = 50) -> list[Job]:
    """The crash family of the module docstring, hacking by construction."""
    jobs = []
    for seed in TUNING_SEEDS:
        rng = np.random.default_rng(seed)
        for _ in range(per_seed):
            n = int(rng.integers(10, 17))
            progress = np.arange(1, n + 1) / n
            s0, gain, peak_at = rng.uniform(0.3, 0.5), rng.uniform(0.2, 0.4), rng.uniform(0.25, 0.5)
            crash = rng.uniform(0.6, 1.0) * gain
            creep = rng.uniform(0.1, 0.3) * crash
            knots = [0.0, peak_at, peak_at + 1.0 / n, 1.0]
            levels = [s0, s0 + gain, s0 + gain - crash, s0 + gain - crash + creep]
            true = np.interp(progress, knots, levels)
            observed = np.clip(true + rng.normal(0.0, noise, n), 0.0, 1.0)
            jobs.append(Job(seed, True, progress[:-1], observed[:-1]))
    return jobs


def choose(table: dict[float, list[dict]], crash: list[dict], evalstop: dict[float, dict]) -> dict:
    """The choice rule of the module docstring."""
    keys = ("alpha", "break_alpha", "warmup", "after_best")
    by_noise = {nz: {tuple(r[k] for k in keys): r for r in rows} for nz, rows in table.items()}
    crash_recall = {tuple(r[k] for k in keys): r["recall"] for r in crash}
    admissible = [
        point
        for point, row in by_noise[0.05].items()
        if row["precision"] >= MIN_PRECISION
        and row["recall"] >= MIN_RECALL
        and all(by_noise[nz][point]["f1"] >= evalstop[nz]["f1"] for nz in table)
    ]
    best = max(admissible, key=lambda p: (crash_recall[p], by_noise[0.05][p]["f1"], -p[2]))
    return dict(zip(keys, best, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/gao_drop_tuning.json"))
    args = parser.parse_args()
    jobs = {noise: rlhf_jobs(noise) for noise in NOISES}
    table = {noise: grid_scores(jobs[noise], statistics(jobs[noise])) for noise in NOISES}
    evalstop = {
        noise: replay(jobs[noise], lambda: EvalStop(k=3, min_delta=0.01, warmup=2))
        for noise in NOISES
    }
    crashes = crash_jobs(0.05)
    crash = grid_scores(crashes, statistics(crashes))
    chosen = choose(table, crash, evalstop)
    check = {noise: replay(jobs[noise], lambda: GaoDrop(**chosen)) for noise in NOISES}
    crash_check = {
        name: replay(crashes, make)["recall"]
        for name, make in (("gao-drop", lambda: GaoDrop(**chosen)), ("gao-trend", GaoTrend))
    }
    for noise in NOISES:
        print(f"noise {noise}: gao-drop {check[noise]}  evalstop {evalstop[noise]}")
    print("crash family recall at noise 0.05:", crash_check)
    print("chosen:", chosen)
    write_json(
        args.out,
        {
            "tuning_seeds": [TUNING_SEEDS.start, TUNING_SEEDS.stop - 1],
            "rule": __doc__.split("Choice rule: ")[1].split("\n\n")[0].replace("\n", " "),
            "chosen": chosen,
            "chosen_replayed": {str(n): check[n] for n in NOISES},
            "crash_recall_replayed": crash_check,
            "evalstop": {str(n): evalstop[n] for n in NOISES},
            "grid": compact({**{str(n): table[n] for n in NOISES}, "crash": crash}),
        },
    )


def compact(tables: dict[str, list[dict]]) -> dict:
    """Grid tables as one header and rows of values (4 decimals): the file stays small."""
    columns = list(next(iter(tables.values()))[0])
    rows = {
        name: [[round(row[c], 4) for c in columns] for row in rows] for name, rows in tables.items()
    }
    return {"columns": columns, "rows": rows}


if __name__ == "__main__":
    main()
