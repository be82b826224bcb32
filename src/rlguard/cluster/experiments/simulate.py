"""Many seeds x base schedulers x stop rules, aggregated into the `rlguard simulate` JSON.

Every rule runs on the same workloads as `none(<same base>)`, so gains are paired per seed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rlguard.cluster.experiments.parallel import fan_out
from rlguard.cluster.experiments.runner import RunSpec, run_spec
from rlguard.cluster.experiments.stats import mean_or_none, paired_gain
from rlguard.cluster.registry import RuleParams
from rlguard.cluster.scenario import ScenarioConfig

SCORE_KEYS = ("precision", "recall", "fpr", "f1")
MEAN_KEYS = (
    *SCORE_KEYS,
    "jct_mean_h",
    "jct_p95_h",
    "makespan_h",
    "gpu_util",
    "gpu_h",
    "waste_gpu_h",
    "quality",
    "quality_regret",
    "quality_regret_rlhf",
    "stopped",
    "hacking_jobs",
    "rlhf_jobs",
    "jobs",
    "preemptions",
)


@dataclass(frozen=True)
class Grid:
    """What to run: one scenario, its seeds, the bases and rules to compare."""

    scenario: ScenarioConfig
    seeds: Sequence[int]
    bases: Sequence[str]
    rules: Sequence[str]
    params: RuleParams = field(default_factory=RuleParams)
    trace: str | None = None
    keep_curves: int = 0
    policy_args: dict[str, dict[str, Any]] = field(default_factory=dict)  # base -> its knobs
    restore_s: float = 60.0

    def specs(self) -> list[RunSpec]:
        rules = tuple(dict.fromkeys(("none", *self.rules)))
        first = self.seeds[0]
        return [
            RunSpec(
                self.scenario,
                seed,
                base,
                rules,
                self.params,
                self.trace,
                restore_s=self.restore_s,
                policy_args=self.policy_args.get(base, {}),
                keep_curves=self.keep_curves if seed == first else 0,
            )
            for base in self.bases
            for seed in self.seeds
        ]


def key(rule: str, base: str) -> str:
    return f"{rule}({base})"


def aggregate(rows: Iterable[dict]) -> dict[str, dict]:
    """Means over seeds per rule(base), plus paired gains against none(base)."""
    groups: dict[str, dict[int, dict]] = defaultdict(dict)
    for row in rows:
        groups[key(row["rule"], row["base"])][row["seed"]] = row
    results: dict[str, dict] = {}
    for name, by_seed in groups.items():
        runs = list(by_seed.values())
        entry = {k: mean_or_none([r[k] for r in runs]) for k in MEAN_KEYS}
        entry["seeds"] = len(runs)
        rule, base = runs[0]["rule"], runs[0]["base"]
        baseline = groups.get(key("none", base))
        if rule != "none" and baseline:
            seeds = sorted(set(by_seed) & set(baseline))
            jct = paired_gain(
                [baseline[s]["jct_mean_h"] for s in seeds],
                [by_seed[s]["jct_mean_h"] for s in seeds],
            )
            waste = paired_gain(
                [baseline[s]["waste_gpu_h"] for s in seeds],
                [by_seed[s]["waste_gpu_h"] for s in seeds],
            )
            entry.update(
                jct_gain=jct["gain"],
                jct_gain_ci=[jct["ci_low"], jct["ci_high"]],
                p_jct=jct["p"],
                waste_cut=waste["gain"],
                waste_cut_ci=[waste["ci_low"], waste["ci_high"]],
                p_waste=waste["p"],
            )
        results[name] = entry
    return results


def run_grid(grid: Grid, **fan_out_args) -> list[dict]:
    """All runs of a grid, one row per (seed, base, rule)."""
    batches = fan_out(run_spec, grid.specs(), **fan_out_args)
    return [row for batch in batches for row in batch]


def run_grids(grids: Sequence[Grid], **fan_out_args) -> list[list[dict]]:
    """Several grids in one fan-out (one Ray start-up for a whole sweep)."""
    specs = [grid.specs() for grid in grids]
    flat = fan_out(run_spec, [s for group in specs for s in group], **fan_out_args)
    out, i = [], 0
    for group in specs:
        out.append([row for batch in flat[i : i + len(group)] for row in batch])
        i += len(group)
    return out


def with_scenario(grid: Grid, **changes) -> Grid:
    """The grid on a changed scenario (re-validated, so a bad sweep value is an error)."""
    return replace(grid, scenario=ScenarioConfig(**{**grid.scenario.model_dump(), **changes}))
