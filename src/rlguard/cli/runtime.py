"""`rlguard runtime ...`: the execution plane's commands (`simulate` here; `bench` is registered
beside it from rlguard.cli.runtime_bench)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.table import Table

from rlguard.cli.options import names, validated
from rlguard.errors import InputError
from rlguard.runtime.sim.setups import PAPER_RESULTS, SETUPS

runtime_app = typer.Typer(
    no_args_is_help=True,
    help="The execution plane: one RLHF step, serverless (RLHFless) vs a serverful pool.",
)


class SimulateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(ge=1)
    tau: float | None = Field(None, gt=0, le=1)
    lam: float | None = Field(None, ge=0, le=1)
    gpus: int | None = Field(None, gt=0)


def _print_table(payload: dict[str, Any], setup: str) -> None:
    speedup, cut = PAPER_RESULTS[setup]
    table = Table(
        title=f"rlguard runtime simulate --setup {setup} (means over seeds)",
        caption=f"paper: {speedup}x speedup, {cut:.1%} lower cost (GPU-seconds) than verl",
    )
    columns = ("step_s", "gpu_s", "cost_usd", "cold_starts", "speedup", "cost_cut", "cost_cut_usd")
    table.add_column("executor")
    for c in columns:
        table.add_column(c, justify="right")
    gains = {k: payload[k] for k in ("speedup", "cost_cut", "cost_cut_usd")}
    rows = [
        ("baseline (verl-style)", payload["baseline"]),
        ("serverless (RLHFless)", {**payload["serverless"], **gains}),
        *((f"  {name}", entry) for name, entry in payload["ablation"].items()),
    ]
    for label, entry in rows:
        cells = ["–" if entry.get(c) is None else f"{entry[c]:.3g}" for c in columns]
        table.add_row(label, *cells)
    Console(width=max(Console().width, 120)).print(table)


def simulate(
    setup: Annotated[str, typer.Option(help="|".join(SETUPS))],
    seeds: Annotated[int, typer.Option(help="workload seeds (0..N-1)")] = 5,
    profile: Annotated[
        str | None, typer.Option(help="time profile: a YAML/JSON file or a shipped name")
    ] = None,
    prices: Annotated[
        Path | None, typer.Option(help="price table (YAML/JSON) overriding defaults")
    ] = None,
    tau: Annotated[float | None, typer.Option(help="cut-and-migrate threshold in (0, 1]")] = None,
    lam: Annotated[
        float | None, typer.Option(help="actor scaling: latency weight in [0, 1]")
    ] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs (default: the setup's)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Simulate one synchronous RLHF step: serverful verl-style pool vs serverless RLHFless."""
    from rich.progress import Progress

    from rlguard.runtime.pricing import load_prices
    from rlguard.runtime.profiles import load_profile
    from rlguard.runtime.sim.experiment import run_setup

    name = names(setup, list(SETUPS), "--setup", allow_many=False)[0]
    opts = validated(SimulateOptions, seeds=seeds, tau=tau, lam=lam, gpus=gpus)
    base = SETUPS[name]
    overrides = {
        k: v
        for k, v in {"tau": opts.tau, "lam": opts.lam, "n_gpus": opts.gpus}.items()
        if v is not None
    }
    chosen = load_profile(profile or base.profile)
    if profile:
        overrides["profile"] = chosen.name
    config = base.model_copy(update=overrides)
    if config.n_gpus % chosen.gpus_per_actor:
        raise InputError(
            f"option --gpus: {config.n_gpus} GPUs do not make whole actors of "
            f"{chosen.gpus_per_actor} (profile {chosen.name})"
        )
    table = load_prices(prices)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"simulating {name}", total=opts.seeds)
        payload = run_setup(
            config, chosen, table, range(opts.seeds), on_seed=lambda _: bar.advance(task)
        )
    if json_out:
        print(json.dumps(payload))
    else:
        _print_table(payload, name)


runtime_app.command("simulate")(simulate)
