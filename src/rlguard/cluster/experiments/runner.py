"""One simulation run (a workload seed x a base scheduler x a stop rule), as a pure function.

Runs are described by small picklable specs so they can be fanned out over Ray unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from rlguard.cluster.engine import Engine, RunResult
from rlguard.cluster.jobs import JobKind, Workload
from rlguard.cluster.metrics import HOUR, summarize
from rlguard.cluster.registry import RULES, RuleParams, build_policy
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.traces import read_trace
from rlguard.cluster.workload import paper_workload


@dataclass(frozen=True)
class RunSpec:
    scenario: ScenarioConfig
    seed: int
    base: str
    rules: tuple[str, ...]
    params: RuleParams = field(default_factory=RuleParams)
    trace: str | None = None
    restore_s: float = 60.0
    policy_args: dict[str, Any] = field(default_factory=dict)  # the base policy's knobs
    keep_curves: int = 0  # how many RLHF trajectories to keep per rule (for plots)


@lru_cache(maxsize=8)
def build_workload(scenario: ScenarioConfig, seed: int, trace: str | None) -> Workload:
    if trace is not None:
        return read_trace(trace, scenario, seed, gpus=scenario.gpus)
    return paper_workload(scenario, seed)


def _trajectories(result: RunResult, workload: Workload, limit: int) -> list[dict]:
    """Observed eval curves of the first `limit` RLHF jobs, cut where each run ended."""
    out = []
    for row, (spec, truth) in enumerate(zip(workload.specs, workload.truths, strict=True)):
        if len(out) >= limit:
            break
        if spec.kind is not JobKind.RLHF:
            continue
        seen = int(result.evals_done[row])
        out.append(
            {
                "job_id": spec.job_id,
                "hacking": truth.hacking,
                "stopped": bool(result.stopped[row]),
                "progress": truth.eval_points.tolist(),
                "observed": truth.observed_scores[:seen].tolist(),
                "true": truth.true_scores.tolist(),
                "delivered": int(result.delivered_eval[row]),
            }
        )
    return out


def run_spec(spec: RunSpec) -> list[dict]:
    """Run every rule of `spec` on the same workload; one row per rule."""
    workload = build_workload(spec.scenario, spec.seed, spec.trace)
    submit = np.array([s.submit_s for s in workload.specs])
    rows = []
    for rule in spec.rules:
        scheduler = Scheduler(build_policy(spec.base, spec.policy_args), RULES[rule](spec.params))
        engine = Engine(workload, scheduler, gpus=spec.scenario.gpus, restore_s=spec.restore_s)
        result = engine.run()
        row = {"seed": spec.seed, "base": spec.base, "rule": rule, **summarize(result, workload)}
        row["jct_h"] = ((result.finish_s - submit) / HOUR).tolist()
        if spec.keep_curves:
            row["curves"] = _trajectories(result, workload, spec.keep_curves)
        rows.append(row)
    return rows
