"""The watcher: poll a job's metric files, report its evals and checkpoints as the job would.

Each poll reads what the framework appended since the last one, and reports every new eval
`{step, score, progress, loss?, proxy?, kl?}` in step order through `on_eval` (JobReporter.eval
takes these keywords), then every new complete checkpoint through `on_checkpoint(step, path,
metrics)`: evals first, so a checkpoint can carry the eval of its step. Anything odd goes to
`on_warning` and the watch goes on.

Steps and restarts. Reports are idempotent by step (the platform stores a re-sent step once), and
the watcher keeps the same rule: an eval is reported only if its step is beyond every step
reported so far. An eval step that goes back (a restarted attempt redoing steps, in a new event
file or the same one) warns `step_backwards` once per drop, and reporting resumes past the
highest step already reported: the first attempt's evals stand, the platform's stop rule sees one
curve with steps increasing.

Step timers. Given `on_step`, verl's per-step timers and lengths are reported too
(step_timers.py), each step once.

Scores. `mode: max` reports the value; `mode: min` (a loss) reports its negation, so that every
stop rule and the best checkpoint read higher as better. Proxy, KL and loss are the values of
their tags at the eval's step, or the last logged before it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from rlguard.platform.watchers.checkpoints import CheckpointFinder, Delivery
from rlguard.platform.watchers.jsonl import JsonlReader
from rlguard.platform.watchers.no_eval import NO_EVAL, NO_EVAL_YET, warning
from rlguard.platform.watchers.points import Point, WatchWarning
from rlguard.platform.watchers.spec import WatchSpec
from rlguard.platform.watchers.stdout import RegexReader
from rlguard.platform.watchers.step_timers import StepTimers
from rlguard.platform.watchers.tensorboard import TensorBoardReader
from rlguard.platform.watchers.totals import TotalSteps
from rlguard.platform.watchers.trainer_state import TrainerStateReader

SIDE_ROLES = ("proxy", "kl", "loss")


@dataclass(frozen=True, slots=True)
class EvalReport:
    step: int
    score: float
    progress: float
    loss: float | None = None
    proxy: float | None = None
    kl: float | None = None

    def kwargs(self) -> dict[str, Any]:
        return asdict(self)


def number(value: Any) -> float | None:
    """A float for a number (bools and strings of numbers too); None for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str | bytes):
        try:
            return float(value)
        except ValueError:
            return None
    return None


class Matcher:
    """A tag's role: exact names, or shell patterns (`*`); a pattern binds to the first tag it
    matches, and another tag matching it later is ignored with a `tag_ambiguous` warning."""

    def __init__(self, tags: dict[str, str], warn: Callable[[WatchWarning], None]) -> None:
        self.tags, self.warn = tags, warn
        self.bound: dict[str, str] = {}  # role -> the tag a pattern bound to
        self.cache: dict[str, str | None] = {}
        self.ambiguous: set[str] = set()

    def role(self, tag: str) -> str | None:
        if tag not in self.cache:
            self.cache[tag] = self._role(tag)
        return self.cache[tag]

    def _role(self, tag: str) -> str | None:
        for role, wanted in self.tags.items():
            if tag == wanted:
                return role
            if "*" in wanted and fnmatchcase(tag, wanted):
                bound = self.bound.setdefault(role, tag)
                if bound == tag:
                    return role
                if tag not in self.ambiguous:
                    self.ambiguous.add(tag)
                    message = (
                        f"{role} tag pattern {wanted!r} matches {bound!r} and {tag!r}; "
                        f"using {bound!r} (set {role}_tag to the one you mean)"
                    )
                    data = {"role": role, "pattern": wanted, "used": bound, "ignored": tag}
                    self.warn(WatchWarning("tag_ambiguous", message, data))
        return None


class Watcher:
    def __init__(
        self,
        spec: WatchSpec,
        job_dir: str | Path,
        on_eval: Callable[..., Any],
        on_checkpoint: Callable[[int, str, dict[str, float]], Any] | None = None,
        on_warning: Callable[[WatchWarning], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        stdout_log: str | Path | None = None,
        on_step: Callable[..., Any] | None = None,
    ) -> None:
        self.spec, self.job_dir = spec, Path(job_dir)
        self.stdout_log = None if stdout_log is None else Path(stdout_log)
        self.on_eval, self.on_checkpoint = on_eval, on_checkpoint
        self.on_warning, self.clock = on_warning, clock
        roles = {("eval_tag" if r == "eval" else f"{r}_tag"): t for r, t in spec.tags.items()}
        self.matcher = Matcher({r.removesuffix("_tag"): t for r, t in roles.items()}, self.warn)
        self.totals = TotalSteps(self.job_dir, spec.total_steps, self.warn)
        self.timers = None if on_step is None else StepTimers(on_step)  # step_timers.py
        self.reader = self._reader()
        self.checkpoints = (
            None
            if spec.checkpoints is None
            else CheckpointFinder(self.job_dir, spec.checkpoints, spec.checkpoint_ready, self.warn)
        )
        self.reported: dict[int, EvalReport] = {}
        self.last_step = -1  # the highest eval step reported
        self.last_seen = -1  # the last eval step read, in the order read
        self.side: dict[str, dict[int, float]] = {role: {} for role in SIDE_ROLES}
        self.polls, self.started = 0, clock()
        self.polls_with_metrics = 0  # polls after the source first yielded any tag
        self.warned: set[str] = set()
        self.stop_reason: str | None = None
        self.events_read = 0

    def _reader(self) -> Any:
        spec, job_dir = self.spec, self.job_dir
        if spec.source == "tensorboard":
            return TensorBoardReader(job_dir, spec.path, self.wanted, self.warn)
        if spec.source == "jsonl":
            args = (spec.step_key, spec.metrics_key, self.wanted, self.warn)
            return JsonlReader(job_dir, spec.path, *args)
        if spec.source == "stdout":
            args = (spec.regex, spec.tags, spec.step_per_match, self.warn)
            if spec.path is not None:
                return RegexReader(job_dir, spec.path, *args)
            if self.stdout_log is None:
                raise ValueError("a stdout watch without a path needs the run's stdout_log")
            return RegexReader(self.stdout_log.parent, self.stdout_log.name, *args)
        return TrainerStateReader(job_dir, spec.path, self.wanted, self.warn)

    def wanted(self, tag: str) -> bool:
        timer = self.timers is not None and self.timers.wanted(tag)
        return timer or tag == self.totals.tag or self.matcher.role(tag) is not None

    def warn(self, warning: WatchWarning) -> None:
        if self.on_warning is not None:
            self.on_warning(warning)

    def warn_once(self, key: str, warning: WatchWarning) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.warn(warning)

    # ----- one poll ----------------------------------------------------------------------------

    def poll(self, final: bool = False) -> list[EvalReport]:
        """Read what is new, report it; the evals reported by this poll. `final`: the job has
        ended (the last poll)."""
        self.polls += 1
        points = self.reader.poll()
        self.polls_with_metrics += bool(self.reader.seen_tags)
        self.events_read += len(points)
        total = self.totals.poll()
        evals: dict[int, float] = {}
        for point in points:
            if point.tag == self.totals.tag:
                self.totals.seen(point.value)
                total = self.totals.value
            if self.timers is not None and self.timers.wanted(point.tag):
                if (value := self._checked(point)) is not None:
                    self.timers.seen(point.step, point.tag, value)
                continue
            role = self.matcher.role(point.tag)
            if role is None:
                continue
            value = self._checked(point)
            if role == "eval":
                self._eval_seen(point, value, evals)
            elif value is not None:
                self.side[role][point.step] = value
        reports = [self._report(step, score, total) for step, score in sorted(evals.items())]
        if self.timers is not None:
            self.timers.flush()
        self._checkpoints()
        self._no_eval(final)
        return reports

    def _checked(self, point: Point) -> float | None:
        value = number(point.value)
        data = {"tag": point.tag, "step": point.step, "file": point.where}
        if value is None:
            shown = repr(point.value)[:80]
            message = f"{point.tag} at step {point.step} is {shown}, not a number; skipped"
            self.warn(WatchWarning("non_numeric", message, data | {"value": shown}))
            return None
        if not math.isfinite(value):
            message = f"{point.tag} at step {point.step} is {value}; skipped"
            self.warn(WatchWarning("not_finite", message, data | {"value": str(value)}))
            return None
        return value

    def _eval_seen(self, point: Point, value: float | None, evals: dict[int, float]) -> None:
        newest = max(self.last_step, max(evals, default=-1))
        if point.step < self.last_seen:
            message = (
                f"{point.tag} went back from step {self.last_seen} to {point.step} in "
                f"{point.where}: a restarted attempt; evals are reported again past step {newest}"
            )
            data = {"from": self.last_seen, "to": point.step, "file": point.where}
            self.warn(WatchWarning("step_backwards", message, data))
        self.last_seen = point.step
        if value is not None and point.step > newest:
            evals[point.step] = value

    def _report(self, step: int, value: float, total: int | None) -> EvalReport:
        if total is None:
            progress = 0.0
            message = "total steps not known (yet): progress is reported as 0 until they are"
            self.warn_once("no_total_steps", WatchWarning("no_total_steps", message))
        else:
            progress = min(max(step / total, 0.0), 1.0)
        score = value if self.spec.mode == "max" else -value
        side = {role: self._side_at(role, step) for role in SIDE_ROLES}
        report = EvalReport(step, score, progress, **side)
        self.reported[step] = report
        self.last_step = step
        answer = self.on_eval(**report.kwargs())
        if isinstance(answer, dict) and answer.get("action") == "stop":
            self.stop_reason = answer.get("reason") or "stopped by the platform"
        return report

    def _side_at(self, role: str, step: int) -> float | None:
        values = self.side[role]
        at = [s for s in values if s <= step]
        if not at:
            return None
        latest = max(at)
        for old in [s for s in at if s < latest]:
            del values[old]  # keep the store small: later evals never need them
        return values[latest]

    def _checkpoints(self) -> None:
        if self.checkpoints is None:
            return
        for step, path in self.checkpoints.poll():
            eval_here = self.reported.get(step)
            metrics = {} if eval_here is None else {"eval": eval_here.score}
            if self.on_checkpoint is not None:
                self.on_checkpoint(step, path, metrics)

    def _no_eval(self, final: bool) -> None:
        """Warn that no eval was read: `no_eval_yet` after `no_eval_warn_s` of the run, or
        after `no_eval_warn_polls` polls that read metrics (the tag is likely wrong, and the
        tags read can be named), whatever the files; `no_eval` when the run has ended."""
        if self.reported:
            return
        waited = self.clock() - self.started
        code = NO_EVAL if final else NO_EVAL_YET
        few = self.polls_with_metrics < self.spec.no_eval_warn_polls
        if code in self.warned or (not final and few and waited < self.spec.no_eval_warn_s):
            return
        said = warning(code, self.spec, self.job_dir, self.reader, waited, self.polls)
        self.warn_once(code, said)

    # ----- the outcome -------------------------------------------------------------------------

    def best(self) -> EvalReport | None:
        """The best eval reported (the earliest of equal scores)."""
        if not self.reported:
            return None
        return max(self.reported.values(), key=lambda r: (r.score, -r.step))

    def delivered(self) -> Delivery:
        """The checkpoint to deliver for the best eval, and which rule chose it."""
        best = self.best()
        if self.checkpoints is None:
            from rlguard.platform.watchers.checkpoints import NONE

            step = None if best is None else best.step
            score = None if best is None else best.score
            return Delivery(step, score, None, None, NONE, "the watch names no checkpoints")
        if best is None:
            return self.checkpoints.deliver(None, None)
        return self.checkpoints.deliver(best.step, best.score)

    def run(self, should_stop: Callable[[], bool], sleep: Callable[[float], None] = time.sleep):
        """Poll every `poll_s` until `should_stop()` (the job ended) or the platform says stop;
        a last poll reads what the job wrote before it ended."""
        while not should_stop() and self.stop_reason is None:
            self.poll()
            sleep(self.spec.poll_s)
        self.poll(final=True)
        return self.delivered()
