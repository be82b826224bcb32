"""`rlguard jobs ...`: the platform's HTTP API from the shell (RLGUARD_URL, RLGUARD_API_KEY)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from rlguard.errors import InputError

jobs_app = typer.Typer(no_args_is_help=True, help="Submit and watch jobs on the platform.")
JsonOut = Annotated[bool, typer.Option("--json", help="print JSON")]
JOB_COLUMNS = ("id", "status", "kind", "gpus", "queue_position", "stop_reason")


def _client():  # type: ignore[no-untyped-def]
    from rlguard.platform.client import Client

    missing = [v for v in ("RLGUARD_URL", "RLGUARD_API_KEY") if not os.environ.get(v)]
    if missing:
        raise InputError(f"set {' and '.join(missing)} (the platform's URL and your API key)")
    return Client.from_env()


def _call(fn, *args):  # type: ignore[no-untyped-def]
    """One API call; its refusal or an unreachable server is one line (exit 2)."""
    from rlguard.platform.client import PlatformError, TransportError

    try:
        return fn(*args)
    except PlatformError as e:
        raise InputError(f"the platform refused it ({e.status}): {e}") from None
    except TransportError as e:
        raise InputError(f"cannot reach the platform at {os.environ['RLGUARD_URL']}: {e}") from None


def _show(obj: Any, json_out: bool) -> None:
    if json_out:
        print(json.dumps(obj))
        return
    console = Console()
    rows = obj["data"] if obj.get("object") == "list" else [obj]
    if rows and rows[0].get("object") == "job":
        table = Table()
        for column in JOB_COLUMNS:
            table.add_column(column)
        for job in rows:
            table.add_row(*("" if job.get(c) is None else str(job[c]) for c in JOB_COLUMNS))
        console.print(table)
    else:
        for row in rows:
            console.print_json(json.dumps(row))


@jobs_app.command()
def submit(
    config: Annotated[Path | None, typer.Argument(help="an rlguard train YAML")] = None,
    command: Annotated[str | None, typer.Option(help="a command job's shell command")] = None,
    gpus: Annotated[
        int | None, typer.Option(help="GPUs the job needs (default: the setup's, else 1)")
    ] = None,
    cpus: Annotated[float, typer.Option(help="CPUs the job needs")] = 1.0,
    kind: Annotated[str | None, typer.Option(help="command jobs: rlhf, sft, dpo, ...")] = None,
    estimate_s: Annotated[float | None, typer.Option(help="your runtime estimate")] = None,
    stop_rule: Annotated[str | None, typer.Option(help="override the stop rule")] = None,
    k: Annotated[int | None, typer.Option(help="override EvalStop's k")] = None,
    patience: Annotated[
        int | None, typer.Option(help="patience rules: evals without a new best")
    ] = None,
    shadow: Annotated[bool, typer.Option(help="the rule only advises")] = False,
    watch: Annotated[
        str | None,
        typer.Option(help="command jobs: a preset (verl, trl, ...) or a YAML watch spec file"),
    ] = None,
    setup: Annotated[
        Path | None,
        typer.Option(
            help="what the job runs (YAML, as `runtime simulate --setup`, + steps): quoted"
        ),
    ] = None,
    budget_gpu_hours: Annotated[
        float | None, typer.Option(help="stop the job when its pace projects past this")
    ] = None,
    json_out: JsonOut = False,
) -> None:
    """Submit a train config or a command; prints the job (with its id) and its quote."""
    from rlguard.train.config import load_yaml

    if (config is None) == (command is None):
        raise InputError("give exactly one of CONFIG or --command")
    if budget_gpu_hours is not None and not budget_gpu_hours > 0:
        raise InputError(
            f"option --budget-gpu-hours: must be greater than 0 (got {budget_gpu_hours})"
        )
    body: dict[str, Any] = {"cpus": cpus}
    if gpus is not None:
        body["gpus"] = gpus
    if setup is not None:
        body["setup"] = setup_option(setup)
    if budget_gpu_hours is not None:
        body["budget_gpu_hours"] = budget_gpu_hours
    if config is not None:
        body["config"] = load_yaml(config)
    else:
        body.update(command=command, **({"kind": kind} if kind else {}))
    if estimate_s is not None:
        body["estimate_s"] = estimate_s
    policy = {"rule": stop_rule, "k": k, "patience": patience, "shadow": shadow}
    body["stop_policy"] = {key: v for key, v in policy.items() if v not in (None, False)}
    if watch is not None:
        body["watch"] = watch_option(watch)
    job = _call(_client().submit, body)
    _show(job, json_out)
    if not json_out:
        print(quote_line(job))


def setup_option(path: Path) -> dict[str, Any]:
    """--setup: the job file, checked here so a bad one is one line before anything is sent."""
    from rlguard.runtime.calib.quote import QuoteSetup
    from rlguard.runtime.policies.datafile import build, read_mapping

    raw = read_mapping(path)
    build(QuoteSetup, raw, str(path))
    return raw


def quote_line(job: dict[str, Any]) -> str:
    """The job's quote in one line (or why it has none)."""
    q = job.get("quote") or {}
    if q.get("status") != "quoted":
        return f"quote: none ({q.get('reason', 'the platform gave none')})"
    step, band = q["step_s"], q.get("band")
    phases = " + ".join(f"{p} {step[p]:.1f}" for p in ("generation", "scoring", "training"))
    spread = ""
    if band:
        lo, hi = band["gpu_hours"]
        spread = f" (leave-one-run-out band {lo:.3g}-{hi:.3g})"
    return (
        f"quote: {step['total']:.1f} s a step ({phases}) x {q['steps']} steps = "
        f"{q['total_s'] / 3600:.3g} h on {q['n_gpus']} {q['gpu']}, {q['gpu_hours']:.3g} GPU-h"
        f"{spread}; estimate_s {job['estimate_s']:.0f} ({job['estimate_source']})"
    )


def watch_option(value: str) -> str | dict[str, Any]:
    """--watch: a preset's name, or a YAML file with a watch spec (at its top, or under
    `watch:`), checked here so a bad file is one line before anything is sent."""
    from rlguard.platform.watchers import WatchSpec
    from rlguard.platform.watchers.presets import PRESETS
    from rlguard.train.config import load_yaml, parse_config

    path = Path(value)
    if not path.is_file():
        if value in PRESETS:
            return value
        raise InputError(
            f"option --watch: {value!r} is neither a preset ({', '.join(PRESETS)}) nor a file"
        )
    raw = load_yaml(path)
    spec = raw["watch"] if set(raw) == {"watch"} else raw
    if not isinstance(spec, dict):
        raise InputError(f"{path}: watch: expected a mapping")
    parse_config(WatchSpec, spec, path)
    return spec


@jobs_app.command("list")
def list_jobs(
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 20, json_out: JsonOut = False
) -> None:
    """Your jobs, newest first."""
    _show(_call(_client().jobs, limit), json_out)


@jobs_app.command()
def get(job_id: str, json_out: JsonOut = False) -> None:
    """One job."""
    _show(_call(_client().job, job_id), json_out)


@jobs_app.command()
def cancel(job_id: str, json_out: JsonOut = False) -> None:
    """Cancel a job (a running one checkpoints and stops)."""
    _show(_call(_client().cancel, job_id), json_out)


@jobs_app.command()
def checkpoints(job_id: str, json_out: JsonOut = False) -> None:
    """A job's checkpoints; is_best marks the one delivered (best by eval score)."""
    _show(_call(_client().checkpoints, job_id), json_out)


@jobs_app.command()
def events(
    job_id: str,
    follow: Annotated[bool, typer.Option(help="stream until the job ends")] = False,
    json_out: JsonOut = False,
) -> None:
    """A job's events (state changes, evals, decisions, checkpoints)."""
    client = _client()
    found = _call(client.follow, job_id) if follow else _call(client.all_events, job_id)
    for event in found:
        print(
            json.dumps(event)
            if json_out
            else f"{event['seq']:>5} {event['type']:<10} {json.dumps(event['data'])}",
            flush=True,
        )


@jobs_app.command("export-curves")
def export_curves(
    out: Annotated[Path, typer.Argument(help="curve file to write (rlguard-curves/1)")],
) -> None:
    """Your jobs' recorded eval curves (every job's, with an admin key), for `rlguard simulate
    --curves` to try a stop rule on your own history."""
    from rlguard.cluster.curve_file import write_curves
    from rlguard.platform.replay import job_curve

    client = _client()
    jobs = _all_jobs(client)
    curves = [c for job in jobs if (c := job_curve(job, _call(client.all_events, job["id"])))]
    if not curves:
        raise InputError("no job has two or more evals with scores in [0, 1] to export")
    write_curves(out, curves, source=f"rlguard platform at {os.environ['RLGUARD_URL']}")
    print(f"wrote {len(curves)} of {len(jobs)} jobs' curves to {out}")


@jobs_app.command("export-steps")
def export_steps(
    out: Annotated[
        Path, typer.Argument(help="CSV to write (runtime/data/verl_steps.csv's columns)")
    ],
) -> None:
    """Your finished quoted jobs' reported steps (every tenant's, with an admin key), for
    `rlguard runtime calibrate OUT.csv --setup JOB.yaml --out PROFILE.yaml`."""
    from rlguard.io import write_text
    from rlguard.platform.states import TERMINAL
    from rlguard.platform.steps import step_rows, write_csv

    client = _client()
    jobs = [j for j in _all_jobs(client) if j["status"] in TERMINAL]
    rows = []
    for job in jobs:
        reports = [e["data"] for e in _call(client.all_events, job["id"]) if e["type"] == "metrics"]
        rows += step_rows(job["id"], job.get("quote"), job.get("setup"), reports)
    if not rows:
        raise InputError("no finished quoted job reported two or more steps to export")
    write_text(out, write_csv(rows))
    print(f"wrote {len(rows)} steps of {len({r.run for r in rows})} jobs to {out}")


def _all_jobs(client) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    jobs, after = [], None
    while True:
        page = _call(client.jobs, 1000, after)
        jobs.extend(page["data"])
        if not page["has_more"]:
            return jobs
        after = page["data"][-1]["id"]


@jobs_app.command()
def download(
    job_id: str,
    out: Annotated[Path, typer.Option(help="directory to write the checkpoint's files into")],
    checkpoint: Annotated[
        str, typer.Option(help="best, a step number, or a checkpoint's name")
    ] = "best",
    json_out: JsonOut = False,
) -> None:
    """Download a job's checkpoint (its best by eval, or a step), each file checked against
    the sha256 the platform recorded."""
    from rlguard.platform.download import download_checkpoint

    got = _call(download_checkpoint, _client(), job_id, checkpoint, out)
    if json_out:
        print(json.dumps(got))
        return
    size = sum(f["size"] for f in got["files"])
    print(f"step {got['step']}: {len(got['files'])} files, {size} bytes in {out}")


@jobs_app.command()
def delete(job_id: str, json_out: JsonOut = False) -> None:
    """Delete a finished job: its checkpoints in the store and its records."""
    _show(_call(_client().delete, job_id), json_out)
