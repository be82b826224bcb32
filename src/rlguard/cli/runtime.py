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
from rlguard.runtime.sim.setups import PAPER_RESULTS, SETUPS, check_fits

runtime_app = typer.Typer(
    no_args_is_help=True,
    help="The execution plane: one RLHF step, serverless (RLHFless) vs a serverful pool.",
)


# Options both `simulate` and `bench` take.
JsonFlag = Annotated[bool, typer.Option("--json", help="print one JSON object")]
PricesFile = Annotated[
    Path | None, typer.Option(help="price table (YAML/JSON) overriding the defaults")
]


class SimulateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(ge=1)
    tau: float | None = Field(None, gt=0, le=1)
    lam: float | None = Field(None, ge=0, le=1)
    gpus: int | None = Field(None, gt=0)


def print_comparison(
    payload: dict[str, Any], columns: tuple[str, ...], title: str, caption: str
) -> None:
    """The `--json` object as a table: baseline, serverless with its gains, then the ablations."""
    table = Table(title=title, caption=caption)
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
        table.add_row(label, *("–" if entry.get(c) is None else f"{entry[c]:.3g}" for c in columns))
    Console(width=max(Console().width, 24 + 14 * len(columns))).print(table)


def simulate(
    setup: Annotated[str, typer.Option(help="|".join(SETUPS))],
    seeds: Annotated[int, typer.Option(help="workload seeds (0..N-1)")] = 5,
    profile: Annotated[
        str | None, typer.Option(help="time profile: a YAML/JSON file or a shipped name")
    ] = None,
    prices: PricesFile = None,
    tau: Annotated[float | None, typer.Option(help="cut-and-migrate threshold in (0, 1]")] = None,
    lam: Annotated[
        float | None, typer.Option(help="actor scaling: latency weight in [0, 1]")
    ] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs (default: the setup's)")] = None,
    json_out: JsonFlag = False,
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
    check_fits(config, chosen, profile)  # before the progress bar, so an error stays one line
    table = load_prices(prices)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"simulating {name}", total=opts.seeds)
        payload = run_setup(
            config, chosen, table, range(opts.seeds), on_seed=lambda _: bar.advance(task)
        )
    if json_out:
        print(json.dumps(payload))
        return
    speedup, cut = PAPER_RESULTS[name]
    print_comparison(
        payload,
        ("step_s", "gpu_s", "cost_usd", "cold_starts", "speedup", "cost_cut", "cost_cut_usd"),
        f"rlguard runtime simulate --setup {name} (means over seeds)",
        f"paper: {speedup}x speedup, {cut:.1%} lower cost (GPU-seconds) than verl",
    )


runtime_app.command("simulate")(simulate)
