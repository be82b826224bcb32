"""Seeds x executors on identical workloads: the numbers `rlguard runtime simulate` prints.

Per seed, the length predictor first observes `warmup_epochs` epochs of the job (every prompt a
few times, lengths drifting), the last of those steps also runs on the serverless executors so
their pre-warming has a history, and then `measure_steps` steps run on the baseline, RLHFless and
each ablation with the same prompts and lengths. Means over steps, then over seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rlguard.runtime.policies.components import SIMULATED_ABLATIONS, Components
from rlguard.runtime.policies.lengths import LengthPredictor
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.policies.report import StepReport, comparison, gains, summarize
from rlguard.runtime.sim.serverful import serverful_step
from rlguard.runtime.sim.serverless import ServerlessSim
from rlguard.runtime.sim.setups import Setup, check_fits
from rlguard.runtime.sim.workload import PromptPool, TokenBatch

BASELINE, SERVERLESS = "baseline", "serverless"


def _observe(predictor: LengthPredictor, batch: TokenBatch) -> None:
    for key, lengths in zip(batch.keys, batch.lengths, strict=True):
        predictor.update(key, lengths)


def _steps(setup: Setup, seed: int) -> tuple[PromptPool, int, int]:
    """(prompt pool, index of the history step, steps per epoch) of one seed's job."""
    pool = PromptPool(setup.workload, seed)
    per_epoch = pool.steps_per_epoch(setup.prompts_per_step)
    return pool, setup.warmup_epochs * per_epoch - 1, per_epoch


def step_batch(setup: Setup, pool: PromptPool, per_epoch: int, index: int) -> TokenBatch:
    epoch, step = divmod(index, per_epoch)
    return pool.batch(epoch, step, setup.prompts_per_step, setup.k)


def measured_batches(setup: Setup, seed: int) -> list[TokenBatch]:
    """The steps `run_seed` measures, for analyses beside the executors (e.g. lower bounds)."""
    pool, history, per_epoch = _steps(setup, seed)
    first = history + 1
    return [
        step_batch(setup, pool, per_epoch, i) for i in range(first, first + setup.measure_steps)
    ]


def run_seed(
    setup: Setup, profile: TimeProfile, prices: Prices, seed: int
) -> dict[str, list[StepReport]]:
    """Step reports per executor ("baseline", "serverless", then the ablations)."""
    pool, history, per_epoch = _steps(setup, seed)
    predictor = LengthPredictor(alpha=setup.alpha)
    sims = {SERVERLESS: ServerlessSim(setup, profile, prices, Components())}
    sims |= {
        name: ServerlessSim(setup, profile, prices, parts)
        for name, parts in SIMULATED_ABLATIONS.items()
    }
    for index in range(history):
        _observe(predictor, step_batch(setup, pool, per_epoch, index))
    last = step_batch(setup, pool, per_epoch, history)
    for sim in sims.values():
        sim.step(last, predictor)
    _observe(predictor, last)

    reports: dict[str, list[StepReport]] = {BASELINE: [], **{name: [] for name in sims}}
    for current in measured_batches(setup, seed):
        reports[BASELINE].append(serverful_step(current, setup, profile, prices))
        for name, sim in sims.items():
            reports[name].append(sim.step(current, predictor))
        _observe(predictor, current)
    return reports


def _mean_summaries(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in summaries[0].items():
        if isinstance(value, dict):
            out[key] = {p: float(np.mean([s[key].get(p, 0.0) for s in summaries])) for p in value}
        else:
            out[key] = float(np.mean([s[key] for s in summaries]))
    return out


def run_setup(
    setup: Setup,
    profile: TimeProfile,
    prices: Prices,
    seeds: Sequence[int],
    on_seed: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The CLI's JSON object: means over seeds, gains against the baseline, and per-seed gains.
    `on_seed(seed)` is called as each seed finishes (a progress bar)."""
    check_fits(setup, profile)
    by_seed = {}
    for seed in seeds:
        by_seed[seed] = run_seed(setup, profile, prices, seed)
        if on_seed is not None:
            on_seed(seed)
    names = list(next(iter(by_seed.values())))
    summaries = {name: [summarize(reports[name]) for reports in by_seed.values()] for name in names}
    means = {name: _mean_summaries(summaries[name]) for name in names}
    config = {
        **setup.model_dump(),
        "seeds": list(seeds),
        "profile": dataclasses.asdict(profile),
        "prices": dataclasses.asdict(prices),
        "cost_cut_basis": "gpu_s (RLHFless measures cost in GPU-seconds); cost_cut_usd beside it",
    }
    payload = comparison(
        config,
        means[BASELINE],
        means[SERVERLESS],
        {name: means[name] for name in SIMULATED_ABLATIONS},
    )
    payload["per_seed"] = [
        {"seed": seed, **gains(summaries[BASELINE][i], summaries[SERVERLESS][i])}
        for i, seed in enumerate(by_seed)
    ]
    return payload
