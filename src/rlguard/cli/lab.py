"""`rlguard lab overoptimization`: the lab's experiment, printed as a table or one JSON object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from rlguard.cli.options import names
from rlguard.errors import InputError
from rlguard.lab.analysis import HEADLINE

lab_app = typer.Typer(no_args_is_help=True, help="The offline world where reward hacking happens.")

SHOWN = (*HEADLINE, "satisfaction_start", "satisfaction_end", "seeds_hacked")


def _print(result: dict) -> None:
    table = Table(title="rlguard lab overoptimization (means over seeds)")
    table.add_column("method")
    for column in SHOWN:
        table.add_column(column, justify="right")
    for method, row in result["methods"].items():
        table.add_row(method, *(f"{row[c]:.3g}" for c in SHOWN))
    console = Console(width=max(Console().width, 150))
    console.print(table)
    for rule, per_method in result["stops"].items():
        stopped = ", ".join(
            f"{m} {s['stopped_seeds']} ({s['missed_hacked']} missed, "
            f"{s['stopped_not_hacked']} not hacking)"
            for m, s in per_method.items()
        )
        console.print(f"{rule}: seeds stopped per method: {stopped}")


@lab_app.command()
def overoptimization(
    seeds: Annotated[
        int | None, typer.Option(min=1, help="seeds per method [default: 5, --quick: 2]")
    ] = None,
    quick: Annotated[bool, typer.Option(help="the reduced version the tests run")] = False,
    out: Annotated[Path, typer.Option(help="output directory (resumes what is there)")] = Path(
        "runs/lab"
    ),
    methods: Annotated[str, typer.Option(help="all, or a comma list")] = "all",
    workers: Annotated[int, typer.Option(min=1, help="runs at a time")] = 2,
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """PPO and GRPO against a gameable proxy, CGPO with judges: gold, proxy and KL per step,
    Gao's fit, and where EvalStop and GaoTrend would stop each run."""
    from dataclasses import replace

    from transformers.utils import logging as hf_logging

    from rlguard.lab.experiment import LabConfig, quick_config
    from rlguard.lab.experiment import overoptimization as run_lab
    from rlguard.lab.methods import METHODS

    if out.exists() and not out.is_dir():
        raise InputError(f"option --out: {out} exists and is not a directory")
    hf_logging.set_verbosity_error()
    cfg = quick_config() if quick else LabConfig()
    if seeds:
        cfg = replace(cfg, seeds=seeds)
    if methods != "all":
        cfg = replace(cfg, methods=tuple(names(methods, list(METHODS), "--methods")))
    result = run_lab(cfg, out, workers=workers, quiet=json_out)
    if json_out:
        print(json.dumps({"methods": result["methods"], "stops": result["stops"]}))
    else:
        _print(result)
        print(f"wrote {out}/results.json, report.md, curves.json, plots/")


@lab_app.command()
def job(
    method: Annotated[str, typer.Argument(help="ppo, grpo, crpg, crraft or codpo")],
    world: Annotated[Path, typer.Option(help="a built world (rlguard lab overoptimization)")],
    seed: Annotated[int, typer.Option(min=0)] = 0,
    quick: Annotated[bool, typer.Option(help="the quick experiment's budget")] = False,
    out: Annotated[
        Path | None, typer.Option(help="output directory [default: $RLGUARD_OUTPUT_DIR]")
    ] = None,
) -> None:
    """One lab run as a job: under the platform it reports its evals and obeys its stops;
    SIGTERM checkpoints it (exit 143) and a rerun resumes it."""
    import os

    from transformers.utils import logging as hf_logging

    from rlguard.cli.train import stop_rule_hook
    from rlguard.lab.experiment import LabConfig, quick_config
    from rlguard.lab.methods import METHODS
    from rlguard.lab.run import lab_trainer, run_config
    from rlguard.lab.world import World
    from rlguard.platform.client import PlatformRule
    from rlguard.train.preemption import PREEMPTED_EXIT, SigtermFlag

    names(method, list(METHODS), "METHOD", allow_many=False)
    if not (world / "world.json").is_file():
        raise InputError(f"option --world: {world} is not a built world (no world.json)")
    out = out or (
        Path(os.environ["RLGUARD_OUTPUT_DIR"]) if "RLGUARD_OUTPUT_DIR" in os.environ else None
    )
    if out is None:
        raise InputError("option --out: give it, or run under the platform")
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    import torch

    torch.set_num_threads(1)
    budget = (quick_config() if quick else LabConfig()).budget
    config = run_config(World(world), method, seed, budget, out)
    rule = PlatformRule.from_env(best_dir=str(out / "best"))
    hooks = [stop_rule_hook(rule)] if rule is not None else []
    saves = [rule.saved] if rule is not None else []  # stored, restored on any node
    summary = lab_trainer(World(world), config, hooks, SigtermFlag(), saves).train()
    print(json.dumps(summary), flush=True)
    if summary["preempted"]:
        raise typer.Exit(PREEMPTED_EXIT)
