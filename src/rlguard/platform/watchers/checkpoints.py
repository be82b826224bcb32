"""Checkpoints the job saves (a glob with `{step}`), and which one a best eval delivers.

The delivered checkpoint is the one saved at the best eval's step, or else the last one saved
before it (its weights are the newest that the eval could speak for); `Delivery.rule` says which.
A checkpoint counts once it exists, and, if the spec names a `checkpoint_ready` file, once that
file is inside it (HF writes trainer_state.json last; verl writes data.pt last).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rlguard.platform.watchers.files import inside, shown
from rlguard.platform.watchers.points import Warn, WatchWarning

AT_BEST = "at_best_eval"
BEFORE_BEST = "last_before_best_eval"
NONE = "no_checkpoint_at_or_before_best_eval"
RULES = (AT_BEST, BEFORE_BEST, NONE)


def step_pattern(template: str) -> tuple[str, re.Pattern[str]]:
    """The glob and the anchored regex (step as group 1) of a `{step}` template."""
    head, tail = template.split("{step}")
    glob = head + "*" + tail

    def part(text: str) -> str:
        out = ""
        for c in text:
            out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        return out

    return glob, re.compile("^" + part(head) + r"(\d+)" + part(tail) + "$")


@dataclass(frozen=True, slots=True)
class Delivery:
    """The checkpoint a job delivers for its best eval, and the rule that chose it."""

    best_step: int | None
    best_score: float | None
    step: int | None  # the checkpoint's step
    path: str | None  # job-relative
    rule: str
    reason: str


class CheckpointFinder:
    def __init__(self, job_dir: Path, template: str, ready: str | None, warn: Warn) -> None:
        self.job_dir, self.ready, self.warn = job_dir, ready, warn
        self.glob, self.regex = step_pattern(template)
        self.found: dict[int, str] = {}  # step -> job-relative path, existing now
        self.reported: set[int] = set()

    def poll(self) -> list[tuple[int, str]]:
        """Checkpoints complete since the last poll, in step order."""
        now: dict[int, str] = {}
        for path in self.job_dir.glob(self.glob):
            name = shown(self.job_dir, path)
            match = self.regex.match(Path(name).as_posix())
            if match is None or not inside(self.job_dir, path):
                continue
            if self.ready is not None and not (path / self.ready).exists():
                continue
            now[int(match.group(1))] = name
        for step in sorted(set(self.found) - set(now)):
            message = f"checkpoint {self.found[step]} (step {step}) was deleted"
            data = {"step": step, "path": self.found[step]}
            self.warn(WatchWarning("checkpoint_gone", message, data))
        self.found = now
        new = sorted((s, p) for s, p in now.items() if s not in self.reported)
        self.reported.update(s for s, _ in new)
        return new

    def deliver(self, best_step: int | None, best_score: float | None) -> Delivery:
        if best_step is None:
            return Delivery(None, None, None, None, NONE, "no eval reported yet")
        if best_step in self.found:
            path = self.found[best_step]
            reason = f"{path} was saved at the best eval's step {best_step}"
            return Delivery(best_step, best_score, best_step, path, AT_BEST, reason)
        before = [s for s in self.found if s < best_step]
        gone = " (the one saved at that step was deleted)" if best_step in self.reported else ""
        if not before:
            reason = f"no checkpoint at or before the best eval's step {best_step}{gone}"
            return Delivery(best_step, best_score, None, None, NONE, reason)
        step = max(before)
        path = self.found[step]
        reason = (
            f"no checkpoint at the best eval's step {best_step}{gone}; {path} (step {step}) is "
            "the last saved before it"
        )
        return Delivery(best_step, best_score, step, path, BEFORE_BEST, reason)
