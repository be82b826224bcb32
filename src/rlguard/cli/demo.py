"""`rlguard demo`: the platform end to end, in one command (what `make demo` runs).

It builds (or reuses) the lab's quick world, starts `rlguard serve` in the background (SQLite,
a local Ray head with 2 virtual GPUs, EvalStop with k = 2, the lab's rule), creates two tenants,
and submits the lab's jobs through the HTTP API: tenant `red` (quota 1 GPU) runs PPO and then
GRPO against the gameable proxy reward, tenant `blue` runs CGPO (CRPG) with its judges. EvalStop
watches every eval online; when it stops a hacking job, its GPU goes to the next job at once. The
table shows each job's end, the step of its delivered checkpoint (best by gold eval), gold there
and at the stop, the GPU-hours the stop freed, whether the job's own evals show it hacking, and,
for a hacking job that ran to its end, why the rule missed it and which rule would not have.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

JOBS = (("red", "ppo"), ("blue", "crpg"), ("red", "grpo"))
TENANTS = {"red": 1, "blue": 1}  # GPU quotas: red's GRPO waits for red's PPO's GPU
COLUMNS = (
    "id",
    "tenant",
    "method",
    "state",
    "stop_reason",
    "best_step",
    "gold_best",
    "gold_at_stop",
    "gpu_hours_freed",
    "hacking",
    "note",
)
RULE_K = 2  # the server's EvalStop k: the lab's (docs/lab.md explains why k = 3 misses there)


def _row(client: Any, job: dict[str, Any], tenant: str, method: str) -> dict[str, Any]:
    from rlguard.cli.demo_verdict import verdict
    from rlguard.cluster.registry import RuleParams

    evals = [e["data"] for e in client.all_events(job["id"]) if e["type"] == "eval"]
    best = job["best_checkpoint"]
    stopped = job["status"] == "early_stopped"
    return {
        "id": job["id"],
        "tenant": tenant,
        "method": method,
        "state": job["status"],
        "stop_reason": job["stop_reason"] or (job["error"] or {}).get("message"),
        "best_step": None if best is None else best["step"],
        "gold_best": None if best is None else round(best["metrics"]["eval"], 4),
        "gold_at_stop": round(evals[-1]["score"], 4) if evals else None,
        "gpu_hours_freed": job["gpu_hours_freed"],
        **verdict(evals, stopped, RuleParams(k=RULE_K)),
    }


def demo(
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    keep_serving: Annotated[
        bool, typer.Option(help="keep the platform up afterwards (Ctrl-C stops it)")
    ] = False,
    out: Annotated[Path, typer.Option(help="demo directory (the world is reused)")] = Path(
        "runs/demo"
    ),
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8321,
) -> None:
    """The live platform: two tenants' lab jobs, hacking ones stopped online by EvalStop."""
    from transformers.utils import logging as hf_logging

    from rlguard.lab.experiment import quick_config
    from rlguard.lab.world import build_world
    from rlguard.platform.client import Client
    from rlguard.platform.jobview import host_problem
    from rlguard.platform.local import open_to_jobs, start_server
    from rlguard.platform.store import Store, default_url
    from rlguard.platform.tenants import create_tenant

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    console = Console(stderr=True)
    world = build_world(out / "world", quick_config().world, progress=not json_out)
    data = out / "platform"
    shutil.rmtree(data, ignore_errors=True)  # a fresh platform each time; the world is kept
    open_to_jobs(world.root)
    problem = host_problem()
    if problem and not json_out:  # a demo on a laptop still runs, and says what it lacks
        console.print(f"[yellow]jobs run unsandboxed (--single-tenant): {problem}[/yellow]")
    args = ["--gpus", "2", "--k", str(RULE_K), "--grace-s", "30"]
    args += ["--mount", f"world={world.root.resolve()}:ro"]
    server = start_server(data, port, [*args, *(["--single-tenant"] if problem else [])])
    url = f"http://127.0.0.1:{port}"
    try:
        store = Store(default_url(data))
        clients = {
            name: Client(url, create_tenant(store, name, quota)[1])
            for name, quota in TENANTS.items()
        }
        _, operator_key = create_tenant(store, "operator", 0, admin=True)  # sees every job
        store.close()
        if not json_out:
            console.print(f"dashboard: {url}/ (sign in with the operator's key {operator_key})")
        submitted = []
        for tenant, method in JOBS:
            command = (
                f"{sys.executable} -m rlguard.cli lab job {method} --world {world.root.resolve()}"
            )
            body = {"command": f"{command} --quick", "kind": "rlhf", "gpus": 1, "estimate_s": 90}
            job = clients[tenant].submit(body)
            submitted.append((tenant, method, job["id"]))
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            disable=json_out,
            transient=True,
        ) as bar:
            task = bar.add_task("jobs")
            while True:
                jobs = [clients[t].job(j) for t, _, j in submitted]
                states = ", ".join(
                    f"{m} {j['status']}" for (_, m, _), j in zip(submitted, jobs, strict=True)
                )
                bar.update(task, description=f"platform {url}: {states}")
                if all(j["finished_at"] is not None for j in jobs):
                    break
                time.sleep(1.0)
        rows = [_row(clients[t], job, t, m) for (t, m, _), job in zip(submitted, jobs, strict=True)]
        if json_out:
            print(json.dumps({"jobs": rows, "url": url}))
        else:
            _print(rows, url)
        failed = [r["id"] for r in rows if r["state"] == "failed"]
        if failed:
            raise RuntimeError(f"demo jobs failed: {failed}; logs under {data / 'jobs'}")
        if keep_serving:
            console.print(
                f"serving on {url}: dashboard at {url}/, key {operator_key} (Ctrl-C stops it)"
            )
            server.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)


def _print(rows: list[dict[str, Any]], url: str) -> None:
    table = Table(title=f"rlguard demo: the live platform, EvalStop online (k = {RULE_K})")
    shown = [c for c in COLUMNS if c != "note"]  # notes are sentences: printed under the table
    for column in shown:
        table.add_column(
            column, justify="right" if column.startswith(("gold", "best", "gpu")) else "left"
        )
    for row in rows:
        table.add_row(*("" if row[c] is None else str(row[c]) for c in shown))
    Console(width=max(Console().width, 160)).print(table)
    for row in rows:
        if row["note"]:
            print(f"{row['method']} ({row['id']}): {row['note']}")
    print(f"dashboard: {url}/   API: {url}/v1 (OpenAPI schema at {url}/openapi.json)")
