"""The job's total steps, for an eval's progress: a number, a tag, a JSON key or a log line."""

from __future__ import annotations

import json
from pathlib import Path

from rlguard.platform.watchers.files import LineTail, matches, read_inside
from rlguard.platform.watchers.jsonl import as_step, dotted
from rlguard.platform.watchers.points import Warn
from rlguard.platform.watchers.regex import compile_regex
from rlguard.platform.watchers.spec import TotalStepsFrom


class TotalSteps:
    """`value` once known. A `tag` is fed by the watcher (`seen`); files are polled here."""

    def __init__(self, job_dir: Path, spec: int | TotalStepsFrom | None, warn: Warn) -> None:
        self.job_dir, self.spec = job_dir, spec
        self.value: int | None = spec if isinstance(spec, int) else None
        self.tail: LineTail | None = None
        self.version: tuple[Path, int] | None = None
        if isinstance(spec, TotalStepsFrom) and spec.regex is not None:
            self.regex = compile_regex(spec.regex, "total_steps.regex")
            self.tail = LineTail(job_dir, job_dir / spec.file, spec.file, warn)

    @property
    def tag(self) -> str | None:
        return self.spec.tag if isinstance(self.spec, TotalStepsFrom) else None

    def seen(self, value: object) -> None:
        step = as_step(value)
        if step is not None and step > 0:
            self.value = step

    def poll(self) -> int | None:
        spec = self.spec
        if not isinstance(spec, TotalStepsFrom) or spec.file is None:
            return self.value
        if self.tail is not None:
            if self.value is None and (self.job_dir / spec.file).exists():
                for line in self.tail.lines():
                    found = self.regex.search(line)
                    if found is not None:
                        self.seen(found.group(1))
                        break
            return self.value
        self._json_key(spec)
        return self.value

    def _json_key(self, spec: TotalStepsFrom) -> None:
        found = matches(self.job_dir, spec.file)
        if not found:
            return
        path = max(found, key=lambda p: p.stat().st_mtime_ns if p.exists() else 0)
        try:
            version = (path, path.stat().st_mtime_ns)
            if version == self.version:
                return
            data = read_inside(self.job_dir, path)
            if data is None:
                return
            self.seen(dotted(json.loads(data), spec.key))
            self.version = version
        except (OSError, ValueError, RecursionError):  # RecursionError: "[[[[..." nested
            return
