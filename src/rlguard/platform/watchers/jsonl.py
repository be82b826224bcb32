"""JSONL metrics files, tailed by complete lines (a line still being written waits).

One record per line; the step is the `step_key` field (dotted for nesting) and the metrics are
the record itself or its `metrics_key` field (verl's file logger writes
`{"step": N, "data": {...}}`). The path may be a glob: each matching file is tailed, new ones as
they appear.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlguard.platform.watchers.files import LineTail, matches, shown
from rlguard.platform.watchers.points import Point, Warn, WatchWarning


def dotted(record: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(record, dict) or part not in record:
            return None
        record = record[part]
    return record


def as_step(value: Any) -> int | None:
    """An integer step (7, 7.0 and "7" are step 7); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


class JsonlReader:
    def __init__(
        self,
        job_dir: Path,
        pattern: str,
        step_key: str,
        metrics_key: str | None,
        wanted: Callable[[str], bool],
        warn: Warn,
    ) -> None:
        self.job_dir, self.pattern, self.warn, self.wanted = job_dir, pattern, warn, wanted
        self.step_key, self.metrics_key = step_key, metrics_key
        self.tails: dict[Path, LineTail] = {}
        self.seen_tags: set[str] = set()
        self.files_found: set[str] = set()  # job-relative: what a no-eval warning names

    def poll(self) -> list[Point]:
        for path in matches(self.job_dir, self.pattern):
            if path not in self.tails and path.is_file():
                name = shown(self.job_dir, path)
                self.tails[path] = LineTail(self.job_dir, path, name, self.warn)
                self.files_found.add(name)
        points: list[Point] = []
        for tail in self.tails.values():
            for line in tail.lines():
                points += self._parse(line, tail.name)
        return points

    def _parse(self, line: str, name: str) -> list[Point]:
        if not line.strip():
            return []
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: "[[[[..." nested
            shown_line = line[:120]
            message = f"{name}: a line is not JSON ({exc}): {shown_line!r}"
            self.warn(WatchWarning("bad_line", message, {"file": name}))
            return []
        metrics = record if self.metrics_key is None else dotted(record, self.metrics_key)
        if not isinstance(metrics, dict):
            return []
        if len(self.seen_tags) < 10_000:
            self.seen_tags.update(metrics)
        watched = [(k, v) for k, v in metrics.items() if self.wanted(k)]
        if not watched:
            return []
        raw = dotted(record, self.step_key)
        step = as_step(raw)
        if step is None:
            message = f"{name}: {self.step_key} is {raw!r}, not a step; skipped its metrics"
            self.warn(WatchWarning("bad_step", message, {"file": name, "step": repr(raw)}))
            return []
        return [Point(step, tag, value, name) for tag, value in watched]
