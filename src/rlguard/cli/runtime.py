"""`rlguard runtime ...`: the execution plane's commands (`simulate` and `calibrate` here; `bench`
lives in rlguard.cli.runtime_bench, imported when it runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console
from rich.table import Table

from rlguard.cli.lazy import lazy_group
from rlguard.cli.options import validated
from rlguard.errors import InputError
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.setups import PAPER_RESULTS, SETUPS, Setup, check_fits

BENCH = (
    "rlguard.cli.runtime_bench:bench",
    "Run real steps here: serverful verl-style pool vs serverless RLHFless, with ablations.",
)
runtime_app = typer.Typer(
    cls=lazy_group({"bench": BENCH}),
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
    setup: Annotated[str, typer.Option(help="|".join(SETUPS) + "|FILE.yaml (your job)")],
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

    from rlguard.runtime.policies.pricing import load_prices
    from rlguard.runtime.sim.experiment import run_setup

    opts = validated(SimulateOptions, seeds=seeds, tau=tau, lam=lam, gpus=gpus)
    base, chosen = _setup_and_profile(setup, profile)
    overrides = {
        k: v
        for k, v in {"tau": opts.tau, "lam": opts.lam, "n_gpus": opts.gpus}.items()
        if v is not None
    }
    if profile:
        overrides["profile"] = chosen.name
    config = base.model_copy(update=overrides)
    check_fits(config, chosen, profile)  # before the progress bar, so an error stays one line
    table = load_prices(prices)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"simulating {config.name}", total=opts.seeds)
        payload = run_setup(
            config, chosen, table, range(opts.seeds), on_seed=lambda _: bar.advance(task)
        )
    if json_out:
        print(json.dumps(payload))
        return
    paper = PAPER_RESULTS.get(setup)
    print_comparison(
        payload,
        ("step_s", "gpu_s", "cost_usd", "cold_starts", "speedup", "cost_cut", "cost_cut_usd"),
        f"rlguard runtime simulate --setup {setup} (means over seeds)",
        f"paper: {paper[0]}x speedup, {paper[1]:.1%} lower cost (GPU-seconds) than verl"
        if paper
        else f"profile {chosen.name}",
    )


def _setup_and_profile(setup: str, profile: str | None) -> tuple[Setup, TimeProfile]:
    """A shipped setup by name, or a user's job file (calib/job.py); `--profile` replaces the
    setup's profile either way."""
    from rlguard.runtime.calib.job import job_profile, job_setup, read_job
    from rlguard.runtime.policies.profiles import load_profile

    if setup in SETUPS:
        base = SETUPS[setup]
        return base, load_profile(profile or base.profile)
    if not Path(setup).is_file():
        raise InputError(
            f"option --setup: unknown name {setup!r} and no such file "
            f"(choose from {', '.join(SETUPS)}, or a job YAML file)"
        )
    job = read_job(Path(setup))
    base = job_setup(job, setup)
    return base, load_profile(profile) if profile else job_profile(job, setup)


runtime_app.command("simulate")(simulate)


def calibrate(
    logs: Annotated[list[Path], typer.Argument(help="verl console logs or JSONL metric files")],
    setup: Annotated[Path, typer.Option(help="the job the logs came from (YAML, as --setup)")],
    out: Annotated[Path, typer.Option(help="profile to write (YAML)")],
    json_out: JsonFlag = False,
) -> None:
    """Fit a time profile to your own verl logs; use it with `simulate --setup JOB --profile`."""
    from rlguard.runtime.calib.calibrate import calibrate as fit_logs
    from rlguard.runtime.calib.job import read_job
    from rlguard.runtime.calib.quote import load_host_range
    from rlguard.runtime.policies.profiles import save_profile

    job = read_job(setup)
    profile, fits, host = fit_logs(job, str(setup), logs)
    note = ", ".join(f"{f.phase} x {f.scale:.3g}" for f in fits)
    sources = " ".join(str(p) for p in logs)
    derivation = dict.fromkeys(
        (k for k in profile.__dataclass_fields__ if k != "name"),
        f"the calibrated verl step model (runtime/data/verl_calibration.yaml) for {job.model} "
        f"on {job.gpu}, scaled to {sources}: {note}",
    )
    save_profile(profile, out, derivation, {"model": job.model, "hardware": job.gpu})
    rows = [
        {
            "phase": f.phase,
            "steps": f.steps,
            "measured_s": f.measured_s,
            "shipped_model_s": f.shipped_s,
            "shipped_model_error": f.shipped_error,
            "scale": f.scale,
        }
        for f in fits
    ]
    if json_out:
        print(json.dumps({"profile": str(out), "phases": rows, "host_factor": host}))
        return
    table = Table(title=f"rlguard runtime calibrate -> {out}")
    for column in ("phase", "steps", "measured s", "shipped model s", "error", "scale"):
        table.add_column(column, justify="left" if column == "phase" else "right")
    for f in fits:
        table.add_row(
            f.phase,
            str(f.steps),
            f"{f.measured_s:.1f}",
            f"{f.shipped_s:.1f}",
            f"{f.shipped_error:+.1%}",
            f"{f.scale:.3g}",
        )
    Console().print(table)
    seen = ""
    if calibration_hosts := load_host_range():
        seen = (
            f"; the calibration's runs needed {calibration_hosts['min']}-{calibration_hosts['max']}"
        )
    print(
        f"host factor {host:.3g}: one scale on every per-op term (launches, host work, phase "
        f"switch, micro-batch overheads) that fits these logs' phases together{seen}"
    )


runtime_app.command("calibrate")(calibrate)
