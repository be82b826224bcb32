"""`rlguard runtime bench`: real RLHF steps on this machine with both executors on Ray, in the
simulator's JSON schema, from measured times (registered in rlguard.cli.runtime's app)."""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

COLUMNS = (
    "step_s",
    "gpu_s",
    "cost_usd",
    "prefill_tokens",
    "prefill_s",
    "actor_idle_s",
    "idle_slot_steps",
    "speedup",
    "cost_cut",
)


def _print_table(payload: dict[str, Any]) -> None:
    config = payload["config"]
    table = Table(
        title=f"rlguard runtime bench (means over {config['steps']} measured steps)",
        caption=f"{config['machine']}; each function process billed as one GPU",
    )
    table.add_column("executor")
    for column in COLUMNS:
        table.add_column(column, justify="right")
    gains = {k: payload[k] for k in ("speedup", "cost_cut")}
    rows = [
        ("baseline (verl-style)", payload["baseline"]),
        ("serverless (RLHFless)", {**payload["serverless"], **gains}),
        *((f"  {name}", entry) for name, entry in payload["ablation"].items()),
    ]
    for label, entry in rows:
        table.add_row(label, *("–" if entry.get(c) is None else f"{entry[c]:.3g}" for c in COLUMNS))
    Console(width=max(Console().width, 140)).print(table)


def bench(
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    prompts: Annotated[int, typer.Option(min=1, help="prompts per step")] = 12,
    k: Annotated[int, typer.Option(min=1, help="samples per prompt")] = 4,
    steps: Annotated[int, typer.Option(min=1, help="measured steps (after a warm-up)")] = 2,
    actors: Annotated[int, typer.Option(min=1, help="serverful pool / most serverless")] = 2,
    keep_alive: Annotated[
        float | None, typer.Option(min=0, help="seconds a released function stays warm")
    ] = None,
    prices: Annotated[
        Path | None, typer.Option(help="price table (YAML/JSON) overriding defaults")
    ] = None,
    tau: Annotated[float, typer.Option(help="cut-and-migrate threshold in (0, 1]")] = 0.9,
    lam: Annotated[float, typer.Option(min=0, max=1, help="scaling: latency weight")] = 0.5,
    seed: Annotated[int, typer.Option(help="workload seed")] = 0,
) -> None:
    """Run real steps here: serverful verl-style pool vs serverless RLHFless, with ablations."""
    import torch

    from rlguard.runtime.bench import BenchSettings, local_ray, run_bench
    from rlguard.runtime.pricing import load_prices

    table = load_prices(prices)
    if keep_alive is not None:
        table = replace(table, keep_alive_s=keep_alive)
    settings = BenchSettings(
        prompts=prompts, k=k, steps=steps, actors=actors, tau=tau, lam=lam, seed=seed
    )
    torch.set_num_threads(1)
    status = Console(stderr=True)
    with local_ray(), tempfile.TemporaryDirectory(prefix="rlguard-bench-") as root:
        payload = run_bench(
            settings, Path(root), table, progress=lambda m: status.log(f"bench: {m}")
        )
    if json_out:
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        _print_table(payload)
