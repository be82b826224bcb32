"""Fan runs out over Ray (local by default, or an existing cluster), or run them in-process.

A rich progress bar on stderr tracks completed runs either way, so stdout stays clean for JSON.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

T = TypeVar("T")
R = TypeVar("R")


def _progress(description: str, quiet: bool) -> Progress:
    console = Console(stderr=True)
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )


def fan_out(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    workers: int | None = None,
    address: str | None = None,
    description: str = "runs",
    quiet: bool = False,
) -> list[R]:
    """Apply `fn` to every item and return the results in the items' order.

    workers=1 with no address runs in this process; otherwise each item is a Ray task, on a local
    Ray started with `workers` CPUs (default: all) or on the cluster at `address`.
    """
    if not items:  # nothing to start Ray for
        return []
    with _progress(description, quiet) as bar:
        task = bar.add_task(description, total=len(items))
        if workers == 1 and address is None:
            results = []
            for item in items:
                results.append(fn(item))
                bar.advance(task)
            return results
        return _fan_out_ray(fn, items, workers, address, bar, task)


def _fan_out_ray(fn, items, workers, address, bar, task):  # type: ignore[no-untyped-def]
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        ray.init(
            address=address or "local",  # "local": a new cluster, never one found on the host
            num_cpus=None if address else (workers or os.cpu_count()),
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
            configure_logging=True,
        )
    try:
        remote = ray.remote(fn)
        pending = {remote.remote(item): i for i, item in enumerate(items)}
        results: list = [None] * len(items)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                try:
                    results[pending.pop(ref)] = ray.get(ref)
                except ray.exceptions.RayTaskError as e:  # surface the task's own error
                    cause = getattr(e, "cause", None)
                    if isinstance(cause, Exception):
                        raise cause from None
                    raise
                bar.advance(task)
        return results
    finally:
        if started_here:
            ray.shutdown()
