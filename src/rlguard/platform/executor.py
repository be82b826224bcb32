"""Jobs as Ray work: one detached Ray actor per run, holding the run's GPUs and CPUs.

The actor starts the job's command as a child process, in the run's sandbox (sandbox.py: its
own uid, view, PID and network namespaces; joblimits.py: its cgroup and disk watch; apiforward.py:
the API's socket) or, single-tenant, in its own process group; stdout and stderr go to the run's
log file and `CUDA_VISIBLE_DEVICES` is as Ray assigned it. The actor is named after the run and
detached, so it survives a restart of the server, which finds it again by name (`reattach`); a
second actor of the same name cannot exist, so a run never runs twice. Stopping is cooperative
first (SIGTERM: a trainer checkpoints and exits), then SIGKILL after the grace period; killing
the actor frees its resources in Ray at once. `terminate` runs in a concurrency group of its own
(CONTROL), so a stop never waits behind the actor's other calls (uploads, log tails). A watched
job (a `watch` spec) has its watcher in a process of its own (watch_runner.py), outside the
sandbox, reading the job's directory, in a cgroup beside the job's.

When the platform kills a job itself (past its disk limit), it says why in `wait`'s answer, not
only in the job's log, whose last lines are the job's to write.

A run is reported started only once its actor has prepared the job's directory on its node (a
restore from the artifact store: jobhome.py) and spawned the job's process (`started`), and lost
only when Ray's control store says its actor or node is dead (raystate.py): a call to the
actor that fails otherwise (a cut connection, a timeout) is asked again a second later.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from rlguard.platform.apiforward import ApiForward
from rlguard.platform.artifacts import StoreUnavailable
from rlguard.platform.confine import confine, die_with_parent
from rlguard.platform.envcache import ENVS, EnvCache, Held, JobPython
from rlguard.platform.jobenv import Environment
from rlguard.platform.jobfiles import OUTPUT
from rlguard.platform.jobhome import (
    JobHome,
    make_private_parents,
    prepare,
    remove_job_files,
    volume_base,
)
from rlguard.platform.joblimits import Cgroup, DiskWatch, tree_over
from rlguard.platform.log_format import about
from rlguard.platform.ray_head import NAMESPACE
from rlguard.platform.raystate import DEAD, actor_name, alive_nodes, placement, run_fate
from rlguard.platform.rundir import RunDir, sweep
from rlguard.platform.runlogs import file_tail, keep_log
from rlguard.platform.sandbox import JobSandbox
from rlguard.platform.uploader import (
    Allowance,
    BadCheckpointPath,
    CheckpointOverLimit,
    inside_job,
    upload_checkpoint,
)
from rlguard.platform.volume import JobVolume
from rlguard.platform.watch_runner import WatchRunner

log = logging.getLogger(__name__)

UPLOAD_TIMEOUT_S = 3600.0
NAME_TIMEOUT_S = 60.0
LOG_TIMEOUT_S = 10.0
CLEAR_TIMEOUT_S = 30.0
"""How long a deleted job's files have, on every node at once, to be removed."""
CONTROL = "control"
"""The actor's concurrency group for `terminate`: a stop never waits for a free thread."""
RETRY_S = 1.0
"""After a call to a run's actor failed while Ray still holds the actor alive: ask again then."""


@dataclass(frozen=True)
class Exited:
    """How a run's process ended: its exit code, and the platform's own reason, if it has one
    (it killed the job past a limit, or the job failed with its disk full)."""

    code: int
    why: str | None = None


class JobProcess:
    """The Ray actor of one run (a threaded actor: `wait` blocks while `terminate` is called).

    With a sandbox, the process is bwrap (sandbox.py) and the job runs as the sandbox's uid;
    signals then go to every process of that uid in the run's cgroup, which reaches all of the
    job however it regrouped itself and nothing of another platform's job that happens to hold
    the same uid on this host; SIGKILL also goes to bwrap's group, whose PID namespace dies with
    it. Without one (single-tenant), to the job's process group as before.
    """

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        home: JobHome,
        log_path: str,
        sandbox: JobSandbox | None = None,
        watch: dict[str, Any] | None = None,
        grace_s: float = 30.0,
        python: JobPython | None = None,
    ) -> None:
        """Quick: the job starts in `started`, so Ray holds the actor created (not pending
        placement) however long its directory takes to prepare. `log_path`: the server's path
        for the run's log, kept where this node keeps the platform's files (`node_file`)."""
        self.argv, self.env, self.home = argv, env, home
        self.log_path = home.node_file(log_path)
        make_private_parents(Path(self.log_path), home)
        self.sandbox, self.watch_spec, self.grace_s = sandbox, watch, grace_s
        self.job_dir = ""  # on this node, once prepared
        self._end = threading.Lock()
        self._ended = False
        self._starting = threading.Lock()
        self._answer: dict[str, Any] | None = None
        self._failure: BaseException | None = None
        self.forward: ApiForward | None = None
        self.cgroup: Cgroup | None = None
        self.run_dir: RunDir | None = None
        self.watch: DiskWatch | None = None
        self.job_watch: WatchRunner | None = None
        self.why: str | None = None  # the platform's reason the job ended, if it has one
        self.volume: JobVolume | None = None  # the job's disk on this node (volume.py)
        self.python = python  # the job's own environment, if it named requirements
        self.env_held: Held | None = None  # that environment on this node, while the run uses it

    def started(self) -> dict[str, Any]:
        """Start the job once (asked again, the same answer): prepare its directory on this node
        (jobhome.py: a restore from the store), then spawn its process; its pid, node and what it
        starts from. A start that failed raises, here and in `wait`."""
        with self._starting:
            if self._answer is None and self._failure is None:
                try:
                    self._answer = self._start()
                except BaseException as e:
                    self._failure = e
                    self._say(f"rlguard: the job could not start: {e}")
        if self._failure is not None:
            raise self._failure
        assert self._answer is not None
        return self._answer

    def _say(self, line: str) -> None:
        with open(self.log_path, "a") as log:
            log.write(line + "\n")

    def _start(self) -> dict[str, Any]:
        disk = None if self.sandbox is None else self.sandbox.limits.disk_bytes
        prepared = prepare(self.home, disk, Path(self.log_path))
        self.job_dir, self.volume = str(prepared.job_dir), prepared.volume
        if prepared.soft_disk is not None:
            self._say(f"rlguard: the disk limit is polled on this node: {prepared.soft_disk}")
        for skipped in prepared.skipped:
            self._say(f"rlguard: not restored: {skipped}")
        if prepared.code is not None:
            self._say(f"rlguard: laid out the {prepared.code}")
        note = prepared.note()
        if note is not None:
            self._say(f"rlguard: starts from {note}")
        env = {**self.env, "RLGUARD_OUTPUT_DIR": str(prepared.job_dir / OUTPUT)}
        env.update(self._interpreter())
        config = self.home.config_path  # the server's path for a train job's config
        if config is not None:  # where this node wrote it (`prepare`)
            here = self.home.node_file(config)
            self.argv = [here if arg == config else arg for arg in self.argv]
        if self.sandbox is not None:
            read_only = tuple(
                self.home.node_file(p) if p == config else p for p in self.sandbox.read_only
            )
            if self.env_held is not None:
                read_only += (str(self.env_held.path),)
            self.sandbox = replace(self.sandbox, job_dir=self.job_dir, read_only=read_only)
        # built first: a spec that no longer validates fails the start before the job runs
        if self.watch_spec is not None:
            self.job_watch = self._job_watch(self.watch_spec, env, self.job_dir, self.grace_s)
        ready, failed = threading.Event(), []

        def parent() -> None:
            """The job's parent thread for the job's whole life: PR_SET_PDEATHSIG fires when
            the thread that spawned a process ends, not its process."""
            try:
                self._spawn(env)
            except BaseException as e:
                failed.append(e)
                return
            finally:
                ready.set()
            self.process.wait()

        threading.Thread(target=parent, name="job-parent", daemon=True).start()
        ready.wait()
        if failed:
            raise failed[0]
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
        disk = None
        if self.sandbox is not None:  # how this node holds its limit (volume.py)
            enforced = "polled" if self.volume is None else "kernel"
            disk = {"limit_bytes": self.sandbox.limits.disk_bytes, "enforced": enforced}
        held = self.env_held
        environment = None if held is None else {"built": held.built, "seconds": held.seconds}
        return {
            "pid": self.process.pid,
            "node_id": node,
            "restored": note,
            "disk": disk,
            "environment": environment,
        }

    def _interpreter(self) -> dict[str, str]:
        """The job's Python first on its PATH, never whichever the host's PATH finds: its own
        environment's (envcache.py: built here, or found in this node's cache), else the
        platform's own."""
        path = os.environ.get("PATH", os.defpath)
        if self.python is None:
            return {"PATH": f"{Path(sys.executable).parent}:{path}"}
        cache = EnvCache(volume_base(self.home.default_root) / ENVS, self.python.cache_mb << 20)
        environment = Environment.from_dict(self.python.environment)
        held = self.env_held = cache.ensure(environment)
        how = f"built in {held.seconds} s" if held.built else "found in this node's cache"
        count = len(environment.packages)
        self._say(f"rlguard: environment {environment.hash} ({count} packages) {how}")
        return {"PATH": f"{held.bin}:{path}", "VIRTUAL_ENV": str(held.path)}

    def _spawn(self, env: dict[str, str]) -> None:
        argv, cwd, fds = self.argv, self.job_dir, ()
        try:
            if self.sandbox:
                argv, env, preexec, fds = self._confine(argv, env, cwd)
            else:
                env, preexec = {**os.environ, **env}, die_with_parent
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=preexec,
                    pass_fds=fds,
                )
        except BaseException:
            self._clean()
            raise
        finally:
            for fd in fds:  # the seccomp program: the child holds its own copy
                os.close(fd)
        if self.watch is not None:
            self.watch.start()
        if self.job_watch is not None:  # its cgroup beside the run's (sandboxed)
            self.job_watch.start(None if self.run_dir is None else self.run_dir.path.name)

    def _job_watch(
        self, spec: dict[str, Any], env: dict[str, str], cwd: str, grace_s: float
    ) -> WatchRunner:
        """The job's watcher (watch_runner.py: a process of its own): it reports with the run's
        token and stops the job the way a cancel does."""

        def stop_job() -> None:
            threading.Thread(target=self.terminate, args=(grace_s,), daemon=True).start()

        return WatchRunner(spec, cwd, self.log_path, env, stop_job)

    def _confine(self, argv: list[str], env: dict[str, str], cwd: str):  # type: ignore[no-untyped-def]
        """Set up the run's socket, cgroup and disk watch; the sandboxed command line, its
        environment, the child's pre-exec step and the descriptors it inherits."""
        sandbox = self.sandbox
        assert sandbox is not None
        sweep()  # what runs whose actors died left on this node
        self.run_dir = RunDir()
        socket_path = str(self.run_dir.path / "api.sock")
        self.forward = ApiForward(socket_path, sandbox.api_url)
        ray_ids = [str(i) for i in ray.get_gpu_ids()] if ray.is_initialized() else []
        name = self.run_dir.path.name
        confined = confine(sandbox, argv, env, cwd, socket_path, ray_ids, name, die_with_parent)
        self.cgroup = confined.cgroup
        limit = sandbox.limits.disk_bytes
        over = tree_over(Path(sandbox.job_dir), limit) if self.volume is None else self.volume.full
        self.watch = DiskWatch(over, self._over_disk)
        return confined.argv, confined.env, confined.preexec, confined.pass_fds

    def _over_disk(self, why: str) -> None:
        """Kill, and say why: in `wait`'s answer (the job's error), and in its log (unless the
        log is on the full disk)."""
        self.why = f"rlguard: {why}; the job was killed"
        self._signal(signal.SIGKILL)
        self.process.wait()
        with contextlib.suppress(OSError), open(self.log_path, "a") as log:
            log.write(self.why + "\n")

    def checkpoint_name(self, reported: str) -> str:
        """A reported checkpoint's path relative to the job's directory on this node (its name
        for the platform); BadCheckpointPath for one outside it."""
        self.started()
        return "/".join(inside_job(self.job_dir, reported))

    def upload_checkpoint(
        self,
        store_uri: str,
        reported: str,
        key: str,
        step: int,
        allowance: Allowance | None = None,
    ) -> dict:
        """On the job's node, outside its sandbox: the checkpoint it reported into the store
        (uploader.py), so the job itself never holds the store's credentials; within
        `allowance` (the operator's limits, less what the job has had uploaded)."""
        self.started()
        return upload_checkpoint(store_uri, self.job_dir, reported, key, step, allowance)

    def wait(self) -> Exited:
        """The exit code and the platform's reason (`why`, None if it has none: `Exited`),
        once the job's process has exited, its watch has reported and its log is in the store
        (runlogs.py: the server kills this actor once it has the answer). Asked again when an
        earlier answer was lost on the way: all that happens once."""
        self.started()
        code = self.process.wait()
        with self._end:
            if not self._ended:
                self._ended = True
                if self.job_watch is not None:
                    self.job_watch.finish()
                self._clean()  # the disk watch has stopped, its kill (if any) said
                full = None if self.volume is None or self.why else self.volume.full()
                if full is not None and code != 0:  # it failed before the watch's next look
                    self.why = f"rlguard: {full} when the job exited"
                if self.home.store_uri is not None and self.home.log_key is not None:
                    keep_log(self.home.store_uri, self.home.log_key, self.log_path)
        return Exited(code, self.why)

    def log_tail(self, max_bytes: int) -> bytes:
        """The last `max_bytes` of the run's log on this node, from a whole line."""
        return file_tail(self.log_path, max_bytes) or b""

    def terminate(self, grace_s: float) -> int:
        """SIGTERM the job, SIGKILL it after `grace_s`; the exit code."""
        self.started()
        self._signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            return self.process.wait()

    def _signal(self, signum: int) -> None:
        if self.sandbox is not None and signum != signal.SIGKILL:
            self._signal_job(signum)  # bwrap lives on to pass the exit code back
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)  # with bwrap's, its PID namespace dies at once
        if self.sandbox is not None:
            self._signal_job(signum)  # and whatever of the job is left

    def _signal_job(self, signum: int) -> None:
        """The job's own processes: its uid's in the run's cgroup (bwrap and its PID 1 stay
        root's); on a host without cgroups, every process of the uid."""
        assert self.sandbox is not None
        pids = self.cgroup.pids() if self.cgroup is not None else None
        if pids is None:
            signal_uid(self.sandbox.uid, signum)
            return
        for pid in pids:
            signal_if_owned(pid, self.sandbox.uid, signum)

    def _clean(self) -> None:
        if self.watch is not None:
            self.watch.done.set()
            if self.watch.is_alive():  # it may be writing why it killed the job: let it finish
                self.watch.join()
        if self.forward is not None:
            self.forward.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.run_dir is not None:
            self.run_dir.remove()
        if self.env_held is not None:
            self.env_held.release()


def signal_if_owned(pid: int, uid: int, signum: int) -> None:
    """Signal `pid` if its real uid is `uid`: through a pidfd opened before the check, so a pid
    that exits and is reused in between is never the one signalled."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if real_uid(pid) == uid:
            signal.pidfd_send_signal(fd, signum)
    except (FileNotFoundError, ProcessLookupError):
        pass  # it exited meanwhile
    finally:
        os.close(fd)


def real_uid(pid: int) -> int:
    """From /proc/PID/status: the directory's owner turns root when a process makes itself
    non-dumpable, its real uid does not."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("Uid:"))
    return int(line.split()[1])


def signal_uid(uid: int, signum: int) -> None:
    """Send `signum` to every process of `uid` (a job's own uid: all of that job): procps'
    `kill -SIG -1` (kill(2) with pid -1) run as that uid. A system binary, because the uid may
    not be allowed to run the platform's interpreter (pyenv under /root)."""
    name = signal.Signals(signum).name.removeprefix("SIG")
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        subprocess.run(
            [shutil.which("kill") or "/bin/kill", f"-{name}", "-1"],
            user=uid,
            group=uid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
        )


@dataclass(frozen=True)
class NodeFiles:
    """What one node answered when asked to remove a deleted job's files."""

    node_id: str
    address: str | None
    removed: list[str] = field(default_factory=list)
    error: str | None = None  # set: something of the job may be left on that node


@dataclass
class RunHandle:
    run_id: str
    actor: Any
    done: Any  # the ObjectRef of actor.wait(): ready when the job's process has exited
    started: Any  # the ObjectRef of actor.started(), until its answer is taken (then None)
    launched_at: float = field(default_factory=time.time)
    node_id: str | None = None  # the Ray node it runs on
    running: bool = False  # its actor has said it spawned the job's process
    retry_at: dict[str, float] = field(default_factory=dict)  # a failed call: when to ask again

    def ask(self, call: str) -> Any:
        """A fresh call to the actor (`wait` or `started`), after one failed."""
        self.retry_at.pop(call, None)
        return getattr(self.actor, call).remote()


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
        self._actor = ray.remote(concurrency_groups={CONTROL: 2})(JobProcess)  # `terminate`'s
        # No CPU: it runs on a node whose CPUs are all jobs'; one try (it is idempotent, and
        # the caller reports a node that did not answer).
        self._remove = ray.remote(num_cpus=0, max_retries=0)(remove_job_files)

    def capacity(self) -> int:
        """GPUs of the nodes Ray holds alive now (virtual ones on a CPU machine)."""
        return sum(alive_nodes().values())

    def launch(
        self,
        run_id: str,
        argv: list[str],
        env: dict[str, str],
        home: JobHome,
        log_path: Path,
        gpus: int,
        cpus: float,
        sandbox: JobSandbox | None = None,
        watch: dict[str, Any] | None = None,
        grace_s: float = 30.0,
        python: JobPython | None = None,
    ) -> RunHandle:
        actor = self._actor.options(
            name=actor_name(run_id),
            lifetime="detached",
            num_gpus=gpus,
            num_cpus=cpus,
            max_concurrency=16,  # a `wait` asked again (`ask`) may block beside the first
            max_restarts=0,
        ).remote(argv, env, home, str(log_path), sandbox, watch, grace_s, python)
        return RunHandle(run_id, actor, actor.wait.remote(), actor.started.remote())

    def reattach(self, run_id: str) -> RunHandle | None:
        """The live run of this id after a server restart, or None if Ray no longer has it."""
        try:
            actor = ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
        except ValueError:
            return None
        return RunHandle(run_id, actor, actor.wait.remote(), actor.started.remote())

    def started(self, handles: list[RunHandle]) -> list[tuple[RunHandle, dict[str, Any]]]:
        """The runs whose process was spawned since last asked, with its pid and node."""
        out = []
        for handle, answer in self._answers(handles, "started"):
            handle.started = None
            if answer is not None:  # None: the actor is dead, and `finished` says it is lost
                handle.node_id, handle.running = answer["node_id"], True
                out.append((handle, answer))
        return out

    def finished(self, handles: list[RunHandle]) -> list[tuple[RunHandle, Exited | None]]:
        """The runs whose process has exited, with how (None: Ray says the run's actor or node
        is dead: the run is lost)."""
        return self._answers(handles, "done")

    def _answers(self, handles: list[RunHandle], call: str) -> list[tuple[RunHandle, Any]]:
        """The ready answers of one call (`done` is `wait`'s) of each run. A call that could not
        be answered counts only if Ray says the run is dead (answer None); otherwise it is asked
        again in RETRY_S. One that ran in the actor and raised answers None too."""
        method = "wait" if call == "done" else call
        now = time.time()
        for h in handles:
            if getattr(h, call) is None and h.retry_at.get(method, math.inf) <= now:
                setattr(h, call, h.ask(method))
        refs = {getattr(h, call): h for h in handles if getattr(h, call) is not None}
        if not refs:
            return []
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        out = []
        for ref in ready:
            handle = refs[ref]
            try:
                out.append((handle, ray.get(ref)))
            except ray.exceptions.RayTaskError as e:  # it ran and raised: no use asking again
                log.warning(
                    "run %s: %s failed: %s",
                    handle.run_id,
                    method,
                    e.cause,
                    extra=about(run_id=handle.run_id),
                )
                out.append((handle, None))
            except ray.exceptions.RayError as e:
                if run_fate(handle.run_id, handle.node_id) == DEAD:
                    out.append((handle, None))
                    continue
                log.warning(
                    "run %s: %s; asking again",
                    handle.run_id,
                    type(e).__name__,
                    extra=about(run_id=handle.run_id),
                )
                setattr(handle, call, None)
                handle.retry_at[method] = now + RETRY_S
        return out

    def log_tail(self, handle: RunHandle, max_bytes: int) -> bytes | None:
        """The run's log tail from its actor (None: the actor did not answer in LOG_TIMEOUT_S)."""
        try:
            return ray.get(handle.actor.log_tail.remote(max_bytes), timeout=LOG_TIMEOUT_S)
        except (ray.exceptions.RayError, TimeoutError) as e:
            log.warning(
                "run %s: its log tail: %s",
                handle.run_id,
                type(e).__name__,
                extra=about(run_id=handle.run_id),
            )
            return None

    def checkpoint_name(self, handle: RunHandle, reported: str) -> str:
        """A reported checkpoint's path relative to the job's directory, from the run's actor
        (only its node knows where that directory is). Raises as `upload`."""
        return self._ask_actor(handle.actor.checkpoint_name.remote(reported), NAME_TIMEOUT_S)

    def upload(
        self,
        handle: RunHandle,
        store_uri: str,
        reported: str,
        key: str,
        step: int,
        allowance: Allowance | None = None,
    ) -> dict[str, Any]:
        """Have the run's actor upload a checkpoint and seal it; its manifest, once it is
        complete. BadCheckpointPath for a path outside the job, CheckpointOverLimit for one over
        `allowance`; StoreUnavailable for anything else."""
        ref = handle.actor.upload_checkpoint.remote(store_uri, reported, key, step, allowance)
        return self._ask_actor(ref, UPLOAD_TIMEOUT_S)

    @staticmethod
    def _ask_actor(ref: Any, timeout_s: float) -> Any:
        try:
            return ray.get(ref, timeout=timeout_s)
        except ray.exceptions.RayTaskError as e:
            if isinstance(e.cause, (BadCheckpointPath, CheckpointOverLimit)):
                raise e.cause from None
            raise StoreUnavailable(
                (str(e.cause) or type(e.cause).__name__).splitlines()[0]
            ) from None
        except (ray.exceptions.RayError, TimeoutError) as e:  # its actor is gone or stuck
            raise StoreUnavailable(type(e).__name__) from None

    def clear_job(
        self, job_id: str, default_root: str, ran_on: set[str], timeout_s: float = CLEAR_TIMEOUT_S
    ) -> list[NodeFiles]:
        """Remove a finished job's files on every node Ray holds alive (`remove_job_files`, a
        task pinned to each node by its id), all at once; what each node answered. `ran_on`:
        the nodes its runs recorded; one of them that is not alive is answered as such (its
        files stay there). Every alive node is asked, not only those: the directory's path on a
        node follows from the job's id alone, and a run whose start failed after its directory
        was made recorded no node."""
        try:
            nodes = {n["NodeID"]: n for n in ray.nodes()}
        except Exception as e:  # whatever Ray raised, it could not say which nodes live
            reason = f"Ray unreachable: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            return [NodeFiles(node, None, error=reason) for node in sorted(ran_on)]
        alive = [node for node, n in nodes.items() if n["Alive"]]
        refs = {
            node: self._remove.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)
            ).remote(job_id, default_root)
            for node in alive
        }
        if refs:
            ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
        answers = []
        for node, ref in refs.items():
            address = nodes[node].get("NodeManagerAddress")
            try:
                done = ray.get(ref, timeout=0)
            except ray.exceptions.GetTimeoutError:
                with contextlib.suppress(ray.exceptions.RayError, ValueError):
                    ray.cancel(ref, force=True)
                answers.append(NodeFiles(node, address, error=f"no answer in {timeout_s:.0f} s"))
                continue
            except ray.exceptions.RayError as e:
                reason = str(getattr(e, "cause", None) or type(e).__name__).splitlines()[0]
                answers.append(NodeFiles(node, address, error=reason))
                continue
            error = "; ".join(done["errors"]) or None
            answers.append(NodeFiles(node, address, done["removed"], error))
        for node in sorted(ran_on - set(alive)):
            address = nodes.get(node, {}).get("NodeManagerAddress")
            answers.append(NodeFiles(node, address, error="node not alive"))
        return answers

    def stop(self, handle: RunHandle, grace_s: float) -> None:
        """Ask the run to stop (SIGTERM), SIGKILL after `grace_s`; returns at once."""
        handle.actor.terminate.options(concurrency_group=CONTROL).remote(grace_s)

    def release(self, handle: RunHandle) -> None:
        """Kill the run's actor (and with it any process left): its resources are free in Ray."""
        with contextlib.suppress(ray.exceptions.RayError):
            ray.kill(handle.actor, no_restart=True)

    def placement(self, handle: RunHandle, gpus: int, cpus: float) -> str:
        """Whether Ray has created the run's actor, is starting its worker on a node that can
        hold it, or has it at no node that can (raystate.placement)."""
        return placement(handle.actor, gpus, cpus)

    def gone(self, run_id: str) -> bool:
        """Whether Ray says the run's actor is dead (a new attempt of its job may start only
        then); False while it is alive or Ray cannot be asked."""
        return run_fate(run_id, None) == DEAD

    def shutdown(self) -> None:
        ray.shutdown()
