"""Jobs as Ray work: one detached Ray actor per run, holding the run's GPUs and CPUs.

The actor starts the job's command as a child process in its own process group, with stdout and
stderr in the run's log file and `CUDA_VISIBLE_DEVICES` as Ray assigned it. The actor is named
after the run and detached, so it survives a restart of the server, which finds it again by name
(`reattach`); a second actor of the same name cannot exist, so a run never runs twice. Stopping
is cooperative first (SIGTERM to the group: a trainer checkpoints and exits), then SIGKILL after
the grace period; killing the actor frees its resources in Ray at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from rlguard.platform.ray_head import NAMESPACE

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL if the actor process dies (Linux), so no job
    process outlives its actor."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class JobProcess:
    """The Ray actor of one run (a threaded actor: `wait` blocks while `terminate` is called)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, log_path: str) -> None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                cwd=cwd,
                env={**os.environ, **env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def pid(self) -> int:
        return self.process.pid

    def wait(self) -> int:
        return self.process.wait()

    def terminate(self, grace_s: float) -> int:
        """SIGTERM the job's process group, SIGKILL it after `grace_s`; the exit code."""
        self._signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            return self.process.wait()

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)


@dataclass
class RunHandle:
    run_id: str
    actor: Any
    done: Any  # the ObjectRef of actor.wait(): ready when the job's process has exited


def actor_name(run_id: str) -> str:
    return f"rlguard-run-{run_id}"


class RayExecutor:
    def __init__(self, address: str, temp_dir: Path | None = None) -> None:
        ray.init(
            address=address,
            namespace=NAMESPACE,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",  # loopback only, whatever the host's interfaces
            _temp_dir=None if temp_dir is None else str(temp_dir),  # a local head's own
        )
        ray.put(None)  # build Ray's serialization context now, before the server's threads run
        # (its first use imports pydantic.v1 lazily; racing another thread's imports, that
        # import can fail with KeyError)
        self._actor = ray.remote(JobProcess)

    def capacity(self) -> int:
        """GPUs Ray reports for the whole cluster (virtual ones on a CPU machine)."""
        return int(ray.cluster_resources().get("GPU", 0))

    def launch(
        self,
        run_id: str,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        log_path: Path,
        gpus: int,
        cpus: float,
    ) -> RunHandle:
        actor = self._actor.options(
            name=actor_name(run_id),
            lifetime="detached",
            num_gpus=gpus,
            num_cpus=cpus,
            max_concurrency=4,
            max_restarts=0,
        ).remote(argv, env, str(cwd), str(log_path))
        return RunHandle(run_id, actor, actor.wait.remote())

    def reattach(self, run_id: str) -> RunHandle | None:
        """The live run of this id after a server restart, or None if Ray no longer has it."""
        try:
            actor = ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
        except ValueError:
            return None
        return RunHandle(run_id, actor, actor.wait.remote())

    def finished(self, handles: list[RunHandle]) -> list[tuple[RunHandle, int | None]]:
        """The runs whose process has exited, with the exit code (None: the actor was lost)."""
        if not handles:
            return []
        refs = {h.done: h for h in handles}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        out = []
        for ref in ready:
            try:
                code: int | None = ray.get(ref)
            except ray.exceptions.RayError:
                code = None
            out.append((refs[ref], code))
        return out

    def stop(self, handle: RunHandle, grace_s: float) -> None:
        """Ask the run to stop (SIGTERM), SIGKILL after `grace_s`; returns at once."""
        handle.actor.terminate.remote(grace_s)

    def release(self, handle: RunHandle) -> None:
        """Kill the run's actor (and with it any process left): its resources are free in Ray."""
        with contextlib.suppress(ray.exceptions.RayError):
            ray.kill(handle.actor, no_restart=True)

    def wait_gone(self, run_id: str, timeout_s: float = 30.0) -> None:
        """Block until Ray no longer knows a run's actor (before a new attempt may start)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
            except ValueError:
                return
            time.sleep(0.1)

    def shutdown(self) -> None:
        ray.shutdown()
