"""`rlguard lab overoptimization`: every method on one world, at one budget, over seeds.

Builds (or reuses) the world, runs each (method, seed) as its own process (two at a time on two
cores, through Ray), then writes the summary JSON, the measured curves for the cluster simulator,
a markdown report and the plots. Finished runs are skipped, interrupted ones resume.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rlguard.cluster.curve_file import write_curves
from rlguard.cluster.curves import MeasuredCurve
from rlguard.cluster.experiments.parallel import fan_out
from rlguard.io import write_json, write_text
from rlguard.lab.analysis import summarize, summarize_run
from rlguard.lab.methods import METHODS
from rlguard.lab.plots import plot_runs
from rlguard.lab.report import render
from rlguard.lab.run import Budget, finished, run
from rlguard.lab.world import World, WorldConfig, build_world


@dataclass(frozen=True)
class LabConfig:
    seeds: int = 5
    methods: tuple[str, ...] = METHODS
    world: WorldConfig = field(default_factory=WorldConfig)
    budget: Budget = field(default_factory=Budget)


def quick_config(seeds: int = 2) -> LabConfig:
    """The reduced experiment the tests run: a Llama of hidden size 64 (a quarter of the default's
    parameters) pretrained on batches of 16 for half the epochs, 48 steps, PPO against CRPG and
    CRRAFT, on two seeds (one seed's outcome turns on float summation order; docs/lab.md)."""
    world = WorldConfig(hidden_size=64, pretrain_epochs=4, sft_epochs=4, batch_size=16)
    methods = ("ppo", "crpg", "crraft")
    return LabConfig(seeds=seeds, methods=methods, world=world, budget=Budget(steps=48))


def _run_dir(out: Path, method: str, seed: int) -> Path:
    return out / "runs" / f"{method}-seed{seed}"


def _run_one(item: tuple[World, Budget, Path, str, int]) -> dict[str, Any]:
    """One (method, seed) run; a plain function of one argument, as Ray's tasks want."""
    world, budget, out, method, seed = item
    return run(world, method, seed, budget, _run_dir(out, method, seed))


def overoptimization(cfg: LabConfig, out: Path, workers: int = 2, quiet: bool = False) -> dict:
    world = build_world(out / "world", cfg.world, progress=not quiet)
    # method by method: PPO (with its critic, the slowest) first, so the last runs are short ones
    items = [
        (world, cfg.budget, out, method, seed)
        for method in cfg.methods
        for seed in range(cfg.seeds)
    ]
    # finished runs are read here: a worker process would import torch to find the same record
    records = [finished(_run_dir(out, method, seed)) for _, _, _, method, seed in items]
    todo = [item for item, record in zip(items, records, strict=True) if record is None]
    ran = iter(fan_out(_run_one, todo, workers=workers, description="lab runs", quiet=quiet))
    records = [next(ran) if record is None else record for record in records]
    result = {"config": asdict(cfg), **summarize(records)}
    write_json(out / "results.json", {**result, "runs": records})
    write_curves(
        out / "curves.json",
        measured_curves(records),
        source=f"rlguard lab overoptimization ({out})",
    )
    write_text(out / "report.md", render(result, records))
    plot_runs(records, out / "plots")
    return result


def measured_curves(records: list[dict[str, Any]]) -> list[MeasuredCurve]:
    """The runs' gold curves in the cluster simulator's format, labelled by the lab's verdict."""
    return [
        MeasuredCurve(
            name=f"{r['method']}/seed{r['seed']}",
            method=r["method"],
            seed=r["seed"],
            progress=r["curve"]["progress"],
            score=r["curve"]["gold"],
            proxy=r["curve"]["proxy"],
            kl=r["curve"]["kl"],
            hacking=summarize_run(r)["hacked"],
        )
        for r in records
    ]
