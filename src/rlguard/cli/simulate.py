"""`rlguard simulate` and `rlguard bench simulate`: the cluster plane's commands."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rlguard.cli.options import names, per_base, validated
from rlguard.cli.options import policy_args as parse_policy_args
from rlguard.cluster.experiments import plots
from rlguard.cluster.experiments.report import render
from rlguard.cluster.experiments.simulate import Grid, aggregate, run_grid
from rlguard.cluster.experiments.sweeps import SWEEPS, parse_values, sweep
from rlguard.cluster.registry import BASES, RULES, RuleParams, build_policy
from rlguard.cluster.scenario import ScenarioConfig, measured_pool
from rlguard.cluster.traces import read_trace
from rlguard.errors import InputError
from rlguard.io import atomic_path, write_json, write_text

STOP_RULES = [r for r in RULES if r != "none"]


def _print_table(results: dict[str, dict]) -> None:
    table = Table(title="rlguard simulate (means over seeds)")
    columns = [
        "precision",
        "recall",
        "fpr",
        "jct_mean_h",
        "jct_gain",
        "p_jct",
        "waste_gpu_h",
        "waste_cut",
        "p_waste",
        "quality_regret",
    ]
    table.add_column("rule(base)")
    for c in columns:
        table.add_column(c, justify="right")
    for name, entry in results.items():
        cells = ["–" if entry.get(c) is None else f"{entry[c]:.3g}" for c in columns]
        table.add_row(name, *cells)
    Console(width=max(Console().width, 160)).print(table)


def _write_outputs(out: Path, config: dict, results: dict, rows: list[dict]) -> None:
    """results.json, report.md and the plots (plots show the first base scheduler)."""
    write_json(out / "results.json", {"config": config, "results": results})
    write_text(out / "report.md", render(config, results))
    first = [row for row in rows if row["base"] == config["bases"][0]]
    with atomic_path(out / "jct_cdf.png") as tmp:
        plots.jct_cdf(first, tmp)
    for row in first:
        if row.get("curves") and row["rule"] != "none":
            with atomic_path(out / f"eval_curves_{row['rule']}.png") as tmp:
                plots.eval_curves(row["curves"], f"{row['rule']}({row['base']})", tmp)


def simulate(
    action: Annotated[str | None, typer.Argument(help="'sweep' to run a sweep")] = None,
    sweep_kind: Annotated[
        str | None, typer.Argument(help=f"sweep over: {'|'.join(SWEEPS)}")
    ] = None,
    scenario: Annotated[str, typer.Option(help="workload generator (sizes/arrivals)")] = "paper",
    trace: Annotated[Path | None, typer.Option(help="replay a CSV trace (Tiresias layout)")] = None,
    curves: Annotated[
        Path | None, typer.Option(help="RLHF jobs replay measured eval curves (rlguard-curves/1)")
    ] = None,
    gpus: Annotated[int, typer.Option(help="cluster GPUs, nodes of 8")] = 64,
    jobs: Annotated[int, typer.Option(help="jobs per seed (paper scenario)")] = 400,
    load: Annotated[float, typer.Option(help="offered load (paper scenario)")] = 0.9,
    rlhf_fraction: Annotated[float, typer.Option(help="share of RLHF jobs")] = 0.8,
    hacking_fraction: Annotated[float, typer.Option(help="share of RLHF runs that hack")] = 0.5,
    noise: Annotated[float, typer.Option(help="eval-score noise std")] = 0.01,
    k: Annotated[int, typer.Option(help="EvalStop: consecutive declines")] = 3,
    seeds: Annotated[int, typer.Option(min=1, help="workload seeds")] = 10,
    seed_base: Annotated[int, typer.Option(help="first seed")] = 0,
    base: Annotated[str, typer.Option(help=f"{'|'.join(BASES)}|all, or a comma list")] = "srtf-est",
    policy_args: Annotated[
        str,
        typer.Option(
            help="knobs of the base policy (JSON, key=value,... or @FILE of JSON/YAML), e.g. "
            """'{"thresholds": [3250, 7200], "promote_knob": 8, "tick_s": null}'; with several """
            """bases, per base: '{"tiresias": {...}, "gittins": {...}}'"""
        ),
    ] = "{}",
    restore_s: Annotated[
        float, typer.Option(help="seconds a resumed job spends restoring (0: as in Tiresias)")
    ] = 60.0,
    rules: Annotated[str, typer.Option(help="stop rules (comma list) or all")] = "all",
    values: Annotated[str | None, typer.Option(help="sweep values, comma list")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Ray workers; 1 = in-process")] = None,
    address: Annotated[str | None, typer.Option(help="existing Ray cluster address")] = None,
    out: Annotated[Path | None, typer.Option(help="write results.json, report.md, plots")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Simulate EvalStop and its competitors over base schedulers (or `sweep KIND`)."""
    if action not in (None, "sweep"):
        raise InputError(f"argument ACTION: expected 'sweep', got {action!r}")
    if action == "sweep" and sweep_kind not in SWEEPS:
        raise InputError(
            f"argument SWEEP_KIND: expected one of {', '.join(SWEEPS)}, got {sweep_kind!r}"
        )
    if scenario != "paper":
        raise InputError(f"option --scenario: unknown scenario {scenario!r} (choose from paper)")
    sweep_values = parse_values(sweep_kind, values) if action == "sweep" else []
    cfg = validated(
        ScenarioConfig,
        gpus=gpus,
        n_jobs=jobs,
        load=load,
        rlhf_fraction=rlhf_fraction,
        hacking_fraction=hacking_fraction,
        noise=noise,
        curves=None if curves is None else str(curves),
    )
    params = validated(RuleParams, k=k)
    if not restore_s >= 0:
        raise InputError(f"option --restore-s: must be >= 0 (got {restore_s})")
    bases = names(base, list(BASES), "--base")
    knobs = per_base(
        parse_policy_args(policy_args), sweep_values if sweep_kind == "base" else bases
    )
    for name, args in knobs.items():
        build_policy(name, args)  # a bad knob fails here, once, not in every run
    # Fail on a bad curve file or trace before any run.
    pool = measured_pool(cfg)
    if pool is not None and sweep_kind == "hacking":
        for fraction in sweep_values:
            pool.require(fraction)
    if trace is not None:
        read_trace(trace, cfg, seed_base, gpus=cfg.gpus)
    grid = Grid(
        scenario=cfg,
        seeds=list(range(seed_base, seed_base + seeds)),
        bases=bases,
        rules=names(rules, STOP_RULES, "--rules"),
        params=params,
        trace=str(trace) if trace else None,
        keep_curves=40 if out else 0,
        policy_args=knobs,
        restore_s=restore_s,
    )
    config = {
        "scenario": scenario,
        "trace": grid.trace,
        **cfg.model_dump(),
        **params.model_dump(),
        "seeds": seeds,
        "seed_base": seed_base,
        "bases": list(grid.bases),
        "rules": ["none", *grid.rules],
        "policy_args": knobs,
        "restore_s": restore_s,
    }
    if pool is not None:
        config.update(
            curves_source=pool.source,
            curves_hacking=len(pool.hacking),
            curves_healthy=len(pool.healthy),
        )
    fan = {"workers": workers, "address": address}
    if action == "sweep":
        rows = sweep(grid, sweep_kind, sweep_values, **fan)
        payload = {"config": config, "sweep": sweep_kind, "rows": rows}
        if out:
            write_json(out / f"sweep_{sweep_kind}.json", payload)
            if sweep_kind == "noise":
                with atomic_path(out / "detection_vs_noise.png") as tmp:
                    plots.detection_vs_noise(rows, tmp)
        if json_out:
            print(json.dumps(payload))
        return
    started = time.perf_counter()
    runs = run_grid(grid, **fan)
    results = aggregate(runs)
    config["wall_s"] = round(time.perf_counter() - started, 3)
    if out:
        _write_outputs(out, config, results, runs)
    if json_out:
        print(json.dumps({"config": config, "results": results}))
    else:
        _print_table(results)


def bench_simulate(
    jobs: Annotated[int, typer.Option(min=1, help="jobs to simulate (paper scenario)")] = 20000,
    gpus: Annotated[int, typer.Option(help="cluster GPUs, nodes of 8")] = 6400,
    load: Annotated[float, typer.Option(help="offered load (paper scenario)")] = 0.9,
    trace: Annotated[
        Path | None, typer.Option(help="replay this CSV trace (Tiresias layout) instead")
    ] = None,
    base: Annotated[str, typer.Option(help="base scheduler")] = "srtf-est",
    rule: Annotated[str, typer.Option(help="stop rule")] = "evalstop",
    seed: int = 0,
) -> None:
    """Time one streamed simulation of a large workload, end to end; prints JSON.

    Jobs are generated (or read from --trace) in blocks as the simulation needs them, so a
    million-job month of a large cluster runs in a few hundred MB.
    """
    from rlguard.cluster.experiments.scale import timed_run

    names(base, list(BASES), "--base", allow_many=False)
    names(rule, list(RULES), "--rule", allow_many=False)
    cfg = validated(ScenarioConfig, gpus=gpus, n_jobs=jobs, load=load)
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]jobs in"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    ) as bar:
        task = bar.add_task("jobs", total=None if trace else jobs)
        report = timed_run(
            cfg,
            base=base,
            rule=rule,
            seed=seed,
            trace=None if trace is None else str(trace),
            progress=lambda n: bar.advance(task, n),
        )
    print(json.dumps({"command": shlex.join(["rlguard", *sys.argv[1:]]), **report}))
