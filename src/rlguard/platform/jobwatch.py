"""A watched job's watcher: a thread that polls the job's files, in a process of its own.

The process (`main`, started by the run's actor through watch_runner.py, in a cgroup and under a
poll deadline of its own) is outside the job's sandbox and can read the job's directory; the
watcher reads it only through checked descriptors (watchers/files.py), so links the job plants
lead nowhere. Whatever a job's files make it do (a huge file, a slow parse) costs that process,
never the actor, whose stop and kill paths stay free. A stdout watch without a path reads the
run's captured stdout and stderr (the platform's log). Evals and checkpoints go to the platform
as `JobReporter` sends them, with the run's own job token: the same idempotency by step, the same
stop rule and decisions with evidence; verl's step timers go as the job's steps
(watchers/step_timers.py). On the first "stop" answer the job is stopped as a cancel stops it
(`stop_job`: the process asks its actor, which SIGTERMs the job and SIGKILLs it after the
grace), and the watch goes on until the process has exited, so a checkpoint the framework saves
on SIGTERM is still seen. Then a last poll, and the delivery: the checkpoint saved at the best
eval's step, or else the last saved before it, with the rule that chose it.

Nothing the job writes may end the watch: an exception of a poll becomes a warning event and the
next poll comes. Warnings are capped per code, so a file of NaNs is a few events, not thousands.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from rlguard.platform.client import JobReporter, PlatformError
from rlguard.platform.watchers import Watcher, WatchSpec, WatchWarning

log = logging.getLogger(__name__)

WARNINGS_PER_CODE = 5
REPORT_RETRY_S = 60.0
"""How long a report is retried while the server is away; the run's end waits at most this for
the delivery (a run's end is recorded only after its watch has reported)."""
POLL, POLLED, STOP = "poll", "polled", "stop"
"""What the watch process says on its stdout: a poll begins, it ended, the job is to stop."""


class JobWatch(threading.Thread):
    def __init__(
        self,
        spec: dict[str, Any],
        job_dir: str,
        reporter: JobReporter,
        stop_job: Callable[[], None],
        stdout_log: str | None = None,
        beat: Callable[[str], None] = lambda _: None,
    ) -> None:
        super().__init__(name="rlguard-watch", daemon=True)
        self.reporter, self.stop_job, self.beat = reporter, stop_job, beat
        self.ended = threading.Event()
        self.stopping = False
        self.warned: Counter[str] = Counter()
        self.watcher = Watcher(
            WatchSpec.model_validate(spec),
            job_dir,
            on_eval=self._eval,
            on_checkpoint=reporter.checkpoint,
            on_warning=self._warning,
            stdout_log=stdout_log,
            on_step=self._step,
        )

    def finish(self) -> None:
        """The job's process has exited: read what it wrote last, deliver, and return."""
        self.ended.set()
        self.join()

    def run(self) -> None:
        while not self.ended.is_set():
            self._poll()
            self.ended.wait(self.watcher.spec.poll_s)
        self._poll(final=True)
        if self.watcher.timers is not None:
            self.watcher.timers.flush(final=True)
        try:
            self.reporter.delivery(dataclasses.asdict(self.watcher.delivered()))
        except Exception:
            log.exception("the delivery of %s was not reported", self.reporter.job_id)

    def _poll(self, final: bool = False) -> None:
        self.beat(POLL)
        try:
            self.watcher.poll(final)
        except Exception as exc:  # a reader's or a report's failure: warn, poll again later
            message = f"the watch failed one poll ({type(exc).__name__}: {str(exc)[:300]})"
            self._warning(WatchWarning("watch_error", message))
        self.beat(POLLED)

    def _eval(self, **report: Any) -> dict[str, Any]:
        answer = self.reporter.eval(**report)
        if answer.get("action") == "stop" and not self.stopping:
            self.stopping = True
            self.stop_job()
        return answer

    def _step(self, step: int, **timers: float) -> None:
        """A step's timers; one the platform refuses (a 0 timer) is a warning, not a lost poll."""
        try:
            self.reporter.step(step, **timers)
        except PlatformError as e:
            message = f"step {step}'s timers were refused: {e}"[:2000]
            self._warning(WatchWarning("step_refused", message, {"step": step}))

    def _warning(self, warning: WatchWarning) -> None:
        self.warned[warning.code] += 1
        count = self.warned[warning.code]
        if count > WARNINGS_PER_CODE + 1:
            return
        if count == WARNINGS_PER_CODE + 1:
            message = f"more {warning.code!r} warnings follow; they are not reported"
            warning = WatchWarning(warning.code, message, {"capped_at": WARNINGS_PER_CODE})
        try:
            self.reporter.warning(warning.code, warning.message[:2000], warning.data)
        except Exception:
            log.exception("a warning of %s was not reported", self.reporter.job_id)


def main() -> None:
    """The watch process: one JSON line on stdin (the spec, the job's directory and stdout log,
    the reporter's URL, job id and token), then stdin's end when the job's process has exited:
    a last poll, the delivery, and exit. Its stdout carries POLL, POLLED and STOP lines."""
    config = json.loads(sys.stdin.readline())
    reporter = JobReporter(config["url"], config["job_id"], config["token"], REPORT_RETRY_S)
    said = threading.Lock()

    def say(line: str) -> None:
        with said:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    watch = JobWatch(
        config["spec"], config["job_dir"], reporter, lambda: say(STOP), config["stdout_log"], say
    )
    watch.start()
    sys.stdin.read()  # until the actor closes it (or dies)
    watch.finish()


if __name__ == "__main__":
    main()
