"""`rlguard runtime bench`: real RLHF steps on this machine with both executors on Ray, in the
simulator's JSON schema, from measured times (registered in rlguard.cli.runtime's app)."""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from rlguard.cli.options import validated
from rlguard.cli.runtime import JsonFlag, PricesFile, print_comparison

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


def bench(
    json_out: JsonFlag = False,
    prompts: Annotated[int, typer.Option(help="prompts per step")] = 12,
    k: Annotated[int, typer.Option(help="samples per prompt")] = 4,
    steps: Annotated[int, typer.Option(help="measured steps (after a warm-up)")] = 2,
    actors: Annotated[int, typer.Option(help="serverful pool / most serverless functions")] = 2,
    keep_alive: Annotated[
        float | None, typer.Option(min=0, help="seconds a released function stays warm")
    ] = None,
    prices: PricesFile = None,
    tau: Annotated[float, typer.Option(help="cut-and-migrate threshold in (0, 1]")] = 0.9,
    lam: Annotated[float, typer.Option(help="actor scaling: latency weight in [0, 1]")] = 0.5,
    seed: Annotated[int, typer.Option(help="workload seed")] = 0,
) -> None:
    """Run real steps here: serverful verl-style pool vs serverless RLHFless, with ablations."""
    import torch

    from rlguard.runtime.executors.bench import BenchSettings, local_ray, run_bench
    from rlguard.runtime.policies.pricing import load_prices

    settings = validated(
        BenchSettings, prompts=prompts, k=k, steps=steps, actors=actors, tau=tau, lam=lam, seed=seed
    )
    table = load_prices(prices)
    if keep_alive is not None:
        table = replace(table, keep_alive_s=keep_alive)
    torch.set_num_threads(1)
    status = Console(stderr=True)
    with local_ray(), tempfile.TemporaryDirectory(prefix="rlguard-bench-") as root:
        payload = run_bench(
            settings, Path(root), table, progress=lambda m: status.log(f"bench: {m}")
        )
    if json_out:
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    config = payload["config"]
    print_comparison(
        payload,
        COLUMNS,
        f"rlguard runtime bench (means over {config['steps']} measured steps)",
        f"{config['machine']}; each function process billed as one GPU",
    )
