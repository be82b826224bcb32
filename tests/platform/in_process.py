"""A Platform in process, for tests of its logic without Ray or a server: the store on SQLite
(what `rlguard serve` uses by default), a recording executor in Ray's place, FIFO and EvalStop
(k = 2, no warm-up)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from rlguard.cluster.registry import RuleParams, build_policy
from rlguard.platform.jobview import Defaults, JobViews
from rlguard.platform.rules import StopRules
from rlguard.platform.service import Platform
from rlguard.platform.store import Store
from rlguard.ports import unused_port


@dataclass
class RecordingExecutor:
    """Stands in for Ray: records what the platform asks of it."""

    gpus: int = 2  # of the nodes "Ray" holds alive
    env: dict[str, dict[str, str]] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)  # runs whose actor it was asked to kill
    dead: set[str] = field(default_factory=set)  # runs whose actor "Ray" says is dead
    placing: str = "unplaced"  # where "Ray" says a run not started is (raystate.placement)

    def capacity(self) -> int:
        return self.gpus

    def launch(  # type: ignore[no-untyped-def]
        self, run_id, argv, env, home, log_path, gpus, cpus, sandbox, watch, grace_s, python=None
    ):
        self.env[env["RLGUARD_JOB_ID"]] = env
        return run_id

    def stop(self, handle, grace_s) -> None:  # type: ignore[no-untyped-def]
        self.stopped.append(handle)

    def release(self, handle) -> None:  # type: ignore[no-untyped-def]
        self.released.append(handle)

    def gone(self, run_id: str) -> bool:
        return run_id in self.dead

    def placement(self, handle, gpus, cpus) -> str:  # type: ignore[no-untyped-def]
        return self.placing  # "Ray" creates no actor

    def log_tail(self, handle, max_bytes) -> bytes | None:  # type: ignore[no-untyped-def]
        return None  # no actor to ask: the server reads its disk, then the store

    def clear_job(self, job_id, default_root, ran_on) -> list:  # type: ignore[no-untyped-def]
        return []  # no nodes: the server removes what its own disk holds


@contextmanager
def in_process_platform(data_dir: Path) -> Iterator[Platform]:
    store = Store(f"sqlite:///{data_dir / 'platform.db'}")
    rules = StopRules(build_policy("fifo", {}), "evalstop", RuleParams(k=2, min_delta=0, warmup=0))
    views = JobViews(False, data_dir, [], "http://127.0.0.1:1", Defaults())
    try:
        yield Platform(store, RecordingExecutor(), rules, data_dir, "http://127.0.0.1:1", views)  # type: ignore[arg-type]
    finally:
        store.close()


@contextmanager
def http_server(app) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The app on loopback (uvicorn in a thread): what a real HTTP client needs (a job's
    standard-library client, the `openai` SDK)."""
    port = unused_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
