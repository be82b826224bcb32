"""A watched job's watcher, run by the run's actor in a process of its own (jobwatch.py `main`).

The watcher parses what the tenant's job writes (files, regexes, TensorBoard records, JSON), as
root outside the job's sandbox: hostile input. In the actor it shared the actor's interpreter, so
a parse that spun or grew held up everything the actor does for the job, its disk watch and its
kill path included. Here it is a child process, with:
  * a cgroup of its own beside the job's (WATCH_LIMITS: memory, CPU, processes), so a huge file
    costs that process, bounded, and never the actor or the node;
  * a deadline per poll: the process says when a poll begins and ends; one that runs past
    `poll_timeout_s` is killed, and the job runs on unwatched, with a `watch_killed` warning that
    says why (as does a process that dies, out of memory say);
  * its own end: when the job's process has exited the actor closes its stdin, and it makes a
    last poll and the delivery, within FINISH_S or it is killed.
A stop the watch asks for (the platform's answer to an eval) comes back as a line and the actor
stops the job as a cancel does; the actor's own paths never wait on the process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from rlguard.platform.client import JobReporter
from rlguard.platform.confine import die_with_parent
from rlguard.platform.joblimits import WATCH_SUFFIX, Cgroup
from rlguard.platform.jobwatch import POLL, POLLED, REPORT_RETRY_S, STOP
from rlguard.platform.sandbox import Limits
from rlguard.platform.watchers import WatchSpec

log = logging.getLogger(__name__)

MiB = 1 << 20
WATCH_LIMITS = Limits(memory_bytes=512 * MiB, pids=32, cpus=0.5, disk_bytes=0, tmp_bytes=0)
"""One watch process's cgroup: a 24 MiB JSON file parses in well under it (bench_watchers.py)."""
POLL_TIMEOUT_S = 120.0
"""A poll running longer than this is killed: no honest framework's files take a poll so long
at WATCH_LIMITS' CPU (benchmarks/bench_watchers.py)."""
FINISH_S = POLL_TIMEOUT_S + REPORT_RETRY_S
"""After the job's end: the last poll, then the delivery (retried while the server is away)."""
ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""numpy's BLAS would start a thread per core: the process has few pids and no use for them."""
STDERR_KEPT = 2000


class WatchRunner:
    def __init__(
        self,
        spec: dict[str, Any],
        job_dir: str,
        stdout_log: str,
        env: dict[str, str],
        stop_job: Callable[[], None],
        poll_timeout_s: float = POLL_TIMEOUT_S,
    ) -> None:
        """`env`: the job's, for the reporter's URL, job id and token. The spec is validated
        here, so one that no longer validates fails the run's start before the job runs."""
        WatchSpec.model_validate(spec)
        self.config = {
            "spec": spec,
            "job_dir": job_dir,
            "stdout_log": stdout_log,
            "url": env["RLGUARD_URL"],
            "job_id": env["RLGUARD_JOB_ID"],
            "token": env["RLGUARD_JOB_TOKEN"],
        }
        self.reporter = JobReporter(
            env["RLGUARD_URL"], env["RLGUARD_JOB_ID"], env["RLGUARD_JOB_TOKEN"], REPORT_RETRY_S
        )
        self.stop_job, self.poll_timeout_s = stop_job, poll_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.killed: str | None = None  # why the actor killed the process
        self.stderr = b""
        self._spawned = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rlguard-watch")
        self._cgroup_name: str | None = None

    def start(self, cgroup_name: str | None = None) -> None:
        """Start the watch process (in a cgroup of this name, WATCH_LIMITS, when given)."""
        self._cgroup_name = cgroup_name
        self._thread.start()
        self._spawned.wait()

    def finish(self, timeout_s: float = FINISH_S) -> None:
        """The job's process has exited: let the watch read what it wrote last and deliver,
        then end it (killed if it has not ended within `timeout_s`)."""
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._kill(f"it had not delivered {timeout_s:.0f} s after the job ended")
            self._thread.join()

    # ----- the thread that spawns the process and reads what it says -------------------------

    def _run(self) -> None:
        """The process's parent for its whole life (its PR_SET_PDEATHSIG fires when the thread
        that spawned it ends, and this one ends only after it)."""
        cgroup = None
        try:
            if self._cgroup_name is not None:
                cgroup = Cgroup(self._cgroup_name + WATCH_SUFFIX, WATCH_LIMITS)
            self.process = self._spawn(cgroup)
        except Exception as e:  # no watch: the job runs, and its owner is told
            self._spawned.set()
            self._warn(f"the watch could not start ({type(e).__name__}: {e})")
            return
        self._spawned.set()
        try:
            self._read()
            self._ended(self.process.wait())
        finally:
            if cgroup is not None:
                cgroup.remove()

    def _spawn(self, cgroup: Cgroup | None) -> subprocess.Popen[bytes]:
        def preexec() -> None:
            die_with_parent()
            if cgroup is not None:
                cgroup.join()
            os.nice(10)  # the job's and the actor's work come first

        process = subprocess.Popen(
            [sys.executable, "-m", "rlguard.platform.jobwatch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **ENV},
            preexec_fn=preexec,
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(self.config).encode() + b"\n")
        process.stdin.flush()
        return process

    def _read(self) -> None:
        """Follow the process's lines until it exits; kill it when a poll overruns."""
        assert self.process is not None and self.process.stdout and self.process.stderr
        out, err = self.process.stdout.fileno(), self.process.stderr.fileno()
        pending, polling_since, open_fds = b"", None, [out, err]
        while open_fds:
            wait = None
            if polling_since is not None:
                wait = max(0.0, polling_since + self.poll_timeout_s - time.monotonic())
            ready, _, _ = select.select(open_fds, [], [], wait)
            if not ready:
                self._kill(f"a poll ran past {self.poll_timeout_s:.0f} s")
                return
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.remove(fd)
                elif fd == err:
                    self.stderr = (self.stderr + chunk)[-STDERR_KEPT:]
                else:
                    *lines, pending = (pending + chunk).split(b"\n")
                    pending = pending[-64:]
                    for line in lines:
                        if line == POLL.encode():
                            polling_since = time.monotonic()
                        elif line == POLLED.encode():
                            polling_since = None
                        elif line == STOP.encode():
                            self.stop_job()

    def _kill(self, why: str) -> None:
        self.killed = why
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    def _ended(self, code: int) -> None:
        """Say why the watch ended early, if it did."""
        if self.killed is not None:
            self._warn(f"the watch was killed: {self.killed}; the job runs on unwatched")
        elif code != 0:
            how = f"signal {-code}" if code < 0 else f"code {code}"
            last = self.stderr.decode(errors="replace").strip().splitlines()[-1:]
            limit = f"its limits: {WATCH_LIMITS.memory_bytes // MiB} MiB, {WATCH_LIMITS.cpus} CPU"
            said = f"; it said: {last[0][:300]}" if last else ""
            self._warn(f"the watch process ended with {how} ({limit}){said}")

    def _warn(self, message: str) -> None:
        try:
            self.reporter.warning("watch_killed", message, {})
        except Exception:
            log.exception("a warning of %s was not reported", self.reporter.job_id)
