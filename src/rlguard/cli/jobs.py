"""`rlguard jobs ...`: the platform's HTTP API from the shell (RLGUARD_URL, RLGUARD_API_KEY).

On argparse (cli/argparsing.py) and the standard-library client, so a command starts without
typer, pydantic, httpx or rich: rich is imported only to print a table, and what checks a job
file (`--setup`, `--watch`, a train config) only when one is given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from rlguard.cli.argparsing import Arg, Flag, Group, Opt, integer, json_flag, number
from rlguard.errors import InputError

group = Group("jobs", "Submit and watch jobs on the platform.")
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


def _each(items: Iterable[Any]) -> Iterator[Any]:
    """A streamed answer's items, its refusal or a lost server one line as with `_call`."""
    found = iter(items)
    while True:
        try:
            yield _call(next, found)
        except StopIteration:
            return


def _show(obj: Any, json_out: bool) -> None:
    if json_out:
        print(json.dumps(obj))
        return
    from rich.console import Console
    from rich.table import Table

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


@group.command(
    Arg("config", "an rlguard train YAML", Path, required=False),
    Opt("--command", "a command job's shell command"),
    Opt("--gpus", "GPUs the job needs (default: the setup's, else 1)", integer()),
    Opt("--cpus", "CPUs the job needs", number, 1.0),
    Opt("--kind", "command jobs: rlhf, sft, dpo, ..."),
    Opt("--estimate-s", "your runtime estimate", number),
    Opt("--stop-rule", "override the stop rule"),
    Opt("--k", "override EvalStop's k", integer()),
    Opt("--patience", "patience rules: evals without a new best", integer()),
    Flag("--shadow", "the rule only advises"),
    Opt("--watch", "command jobs: a preset (verl, trl, ...) or a YAML watch spec file"),
    Opt(
        "--setup", "what the job runs (YAML, as `runtime simulate --setup`, + steps): quoted", Path
    ),
    Opt("--budget-gpu-hours", "stop the job when its pace projects past this", number),
    Opt("--working-dir", "command jobs: your code's directory; the job starts in a copy", Path),
    Opt("--exclude", "--working-dir: patterns left out, comma-separated (.gitignore syntax)"),
    Opt(
        "--requirements",
        "command jobs: a requirements file, installed in the job's own Python",
        Path,
    ),
    json_flag(),
)
def submit(
    config: Path | None,
    command: str | None,
    gpus: int | None,
    cpus: float,
    kind: str | None,
    estimate_s: float | None,
    stop_rule: str | None,
    k: int | None,
    patience: int | None,
    shadow: bool,
    watch: str | None,
    setup: Path | None,
    budget_gpu_hours: float | None,
    working_dir: Path | None,
    exclude: str | None,
    requirements: Path | None,
    json_out: bool,
) -> None:
    """Submit a train config or a command; prints the job (with its id) and its quote."""
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
        from rlguard.train.config import load_yaml

        body["config"] = load_yaml(config)
    else:
        body.update(command=command, **({"kind": kind} if kind else {}))
    if estimate_s is not None:
        body["estimate_s"] = estimate_s
    policy = {"rule": stop_rule, "k": k, "patience": patience, "shadow": shadow}
    body["stop_policy"] = {key: v for key, v in policy.items() if v not in (None, False)}
    if watch is not None:
        body["watch"] = watch_option(watch)
    if requirements is not None:
        from rlguard.platform.jobenv import read_requirements

        body["requirements"] = read_requirements(requirements)
    client = _client()
    if working_dir is not None:
        body["working_dir"] = ship_working_dir(client, working_dir, exclude)
    elif exclude is not None:
        raise InputError("option --exclude: goes with --working-dir")
    job = _call(client.submit, body)
    _show(job, json_out)
    if not json_out:
        print(quote_line(job))


def ship_working_dir(client: Any, directory: Path, exclude: str | None) -> str:
    """--working-dir: packed here (workdir.py), uploaded unless the platform has those bytes;
    its id for the job's `working_dir`."""
    from rlguard.platform.workdir import pack

    patterns = tuple(p.strip() for p in (exclude or "").split(",") if p.strip())
    return _call(client.working_dir, pack(directory, patterns))["id"]


def setup_option(path: Path) -> dict[str, Any]:
    """--setup: the job file, checked here so a bad one is one line before anything is sent."""
    from rlguard.runtime.calib.quote import QuoteSetup
    from rlguard.runtime.policies.datafile import build, read_mapping

    raw = read_mapping(path)
    build(QuoteSetup, raw, str(path))
    return raw


def quote_line(job: dict[str, Any]) -> str:
    """The job's quote in one line (or why it has none), then a line for each part of the job
    outside the calibration's domain."""
    q = job.get("quote") or {}
    if q.get("status") != "quoted":
        return f"quote: none ({q.get('reason', 'the platform gave none')})"
    step, band = q["step_s"], q.get("band")
    phases = " + ".join(f"{p} {step[p]:.1f}" for p in ("generation", "scoring", "training"))
    spread = ""
    if band:
        lo, hi = band["gpu_hours"]
        spread = f" (leave-one-run-out band {lo:.3g}-{hi:.3g})"
    if hosts := q.get("host_range"):
        lo, hi = hosts["gpu_hours"]
        spread += f" (on the calibration's fastest to slowest hosts {lo:.3g}-{hi:.3g})"
    notes = q.get("outside_domain", [])
    caveats = "".join(f"\n  outside the band's domain: {note}" for note in notes)
    return (
        f"quote: {step['total']:.1f} s a step ({phases}) x {q['steps']} steps = "
        f"{q['total_s'] / 3600:.3g} h on {q['n_gpus']} {q['gpu']}, {q['gpu_hours']:.3g} GPU-h"
        f"{spread}; estimate_s {job['estimate_s']:.0f} ({job['estimate_source']}){caveats}"
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


@group.command(Opt("--limit", "jobs to list", integer(1, 1000), 20), json_flag(), name="list")
def list_jobs(limit: int, json_out: bool) -> None:
    """Your jobs, newest first."""
    _show(_call(_client().jobs, limit), json_out)


@group.command(Arg("job_id", "the job's id"), json_flag())
def get(job_id: str, json_out: bool) -> None:
    """One job."""
    _show(_call(_client().job, job_id), json_out)


@group.command(Arg("job_id", "the job's id"), json_flag())
def cancel(job_id: str, json_out: bool) -> None:
    """Cancel a job (a running one checkpoints and stops)."""
    _show(_call(_client().cancel, job_id), json_out)


@group.command(Arg("job_id", "the job's id"), json_flag())
def pause(job_id: str, json_out: bool) -> None:
    """Pause a job until resumed (a running one checkpoints and frees its GPUs)."""
    _show(_call(_client().pause, job_id), json_out)


@group.command(Arg("job_id", "the job's id"), json_flag())
def resume(job_id: str, json_out: bool) -> None:
    """Queue a paused job again (it resumes from its newest checkpoint)."""
    _show(_call(_client().resume, job_id), json_out)


@group.command(Arg("job_id", "the job's id"), json_flag())
def checkpoints(job_id: str, json_out: bool) -> None:
    """A job's checkpoints; is_best marks the one delivered (best by eval score)."""
    _show(_call(_client().checkpoints, job_id), json_out)


@group.command(
    Arg("job_id", "the job's id"), Flag("--follow", "stream until the job ends"), json_flag()
)
def events(job_id: str, follow: bool, json_out: bool) -> None:
    """A job's events (state changes, evals, decisions, checkpoints)."""
    client = _client()
    found = client.follow(job_id) if follow else _call(client.all_events, job_id)
    for event in _each(found):
        print(
            json.dumps(event)
            if json_out
            else f"{event['seq']:>5} {event['type']:<10} {json.dumps(event['data'])}",
            flush=True,
        )


@group.command(Arg("out", "curve file to write (rlguard-curves/1)", Path))
def export_curves(out: Path) -> None:
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


@group.command(Arg("out", "CSV to write (runtime/data/verl_steps.csv's columns)", Path))
def export_steps(out: Path) -> None:
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


@group.command(
    Arg("job_id", "the job's id"),
    Opt("--out", "directory to write the checkpoint's files into", Path, required=True),
    Opt("--checkpoint", "best, a step number, or a checkpoint's name", default="best"),
    json_flag(),
)
def download(job_id: str, out: Path, checkpoint: str, json_out: bool) -> None:
    """Download a job's checkpoint (its best by eval, or a step), each file checked against
    the sha256 the platform recorded."""
    from rlguard.platform.download import download_checkpoint

    got = _call(download_checkpoint, _client(), job_id, checkpoint, out)
    if json_out:
        print(json.dumps(got))
        return
    size = sum(f["size"] for f in got["files"])
    print(f"step {got['step']}: {len(got['files'])} files, {size} bytes in {out}")


@group.command(Arg("job_id", "the job's id"), json_flag())
def delete(job_id: str, json_out: bool) -> None:
    """Delete a finished job: its checkpoints in the store and its records."""
    _show(_call(_client().delete, job_id), json_out)
