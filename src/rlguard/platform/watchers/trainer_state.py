"""HF Trainer's `trainer_state.json`: its `log_history` (train entries, `eval_*` entries, each
with `step`).

The Trainer rewrites the whole file in each `checkpoint-N/` it saves (transformers `TrainerState.
save_to_json`), so the file is read again whenever it changes, only the newest one (the highest
checkpoint step, which holds the whole history) is read, and only entries after the last step
already handed on are handed on. A file caught mid-write is read on the next poll. A resumed run
(from `checkpoint-20` after `checkpoint-30` was saved) carries its history on, so its new
entries come after the old attempt's; the steps it redoes are not handed on again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from rlguard.platform.watchers.files import WHOLE_FILE_MAX, matches, read_inside, shown
from rlguard.platform.watchers.jsonl import as_step
from rlguard.platform.watchers.points import Point, Warn, WatchWarning

_NUMBER = re.compile(r"(\d+)")


def _order(path: Path) -> tuple[int, float]:
    numbers = _NUMBER.findall(path.parent.name)
    return (int(numbers[-1]) if numbers else -1, path.stat().st_mtime)


class TrainerStateReader:
    def __init__(
        self, job_dir: Path, pattern: str, wanted: Callable[[str], bool], warn: Warn
    ) -> None:
        self.job_dir, self.pattern, self.wanted, self.warn = job_dir, pattern, wanted, warn
        self.version: tuple[Path, int, int] | None = None
        self.last_step = -1
        self.seen_tags: set[str] = set()
        self.files_found: set[str] = set()  # job-relative: what a no-eval warning names
        self.too_large: set[Path] = set()

    def newest(self) -> Path | None:
        found = []
        for path in matches(self.job_dir, self.pattern):
            try:
                found.append((_order(path), path))
            except FileNotFoundError:  # rotated away between the glob and the stat
                continue
        if not found:
            return None
        newest = max(found)[1]
        self.files_found.add(shown(self.job_dir, newest))
        return newest

    def poll(self) -> list[Point]:
        path = self.newest()
        if path is None:
            return []
        try:
            stat = path.stat()
            version = (path, stat.st_mtime_ns, stat.st_size)
            if version == self.version:
                return []
            if stat.st_size > WHOLE_FILE_MAX:
                self.version = version  # never read; warned once per file
                return self._too_large(path, stat.st_size)
            data = read_inside(self.job_dir, path)
            if data is None:
                return []
            state = json.loads(data)
        except (OSError, ValueError, RecursionError):  # RecursionError: "[[[[..." nested
            return []  # being written or rotated: the next poll reads it
        self.version = version
        history = state.get("log_history") if isinstance(state, dict) else None
        name = shown(self.job_dir, path)
        if not isinstance(history, list):
            message = f"{name} has no log_history list"
            self.warn(WatchWarning("bad_line", message, {"file": name}))
            return []
        return self._new_points(history, name)

    def _too_large(self, path: Path, size: int) -> list[Point]:
        if path in self.too_large:
            return []
        self.too_large.add(path)
        name = shown(self.job_dir, path)
        message = f"{name} holds {size} bytes, over the {WHOLE_FILE_MAX} a watch reads; not read"
        self.warn(WatchWarning("file_too_large", message, {"file": name, "bytes": size}))
        return []

    def _new_points(self, history: list, name: str) -> list[Point]:
        points, top = [], -1
        for entry in history:
            if not isinstance(entry, dict):
                continue
            step = as_step(entry.get("step"))
            if step is None:
                continue
            top = max(top, step)
            if len(self.seen_tags) < 10_000:
                self.seen_tags.update(entry)
            if step > self.last_step:
                points += [Point(step, k, v, name) for k, v in entry.items() if self.wanted(k)]
        if 0 <= top < self.last_step:
            message = (
                f"{name} ends at step {top}, before step {self.last_step} already read: "
                "a restarted or older run; its steps up to that are not reported again"
            )
            data = {"file": name, "from": self.last_step, "to": top}
            self.warn(WatchWarning("step_backwards", message, data))
        self.last_step = max(self.last_step, top)
        return points
