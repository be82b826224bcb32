"""TensorBoard event files, tailed with tensorboard's own event file loader.

The loader keeps its file open and its offset, and a record cut short by a writer mid-flush is
read again whole on the next `Load()` (tensorboard's stub record reader buffers it), so each poll
reads only what was appended. Event files are found under the watched directory (or directories:
the path may be a glob, NeMo-RL's `logs/exp_*/tensorboard`) at any depth, so the new file a
restarted job writes, in the same directory or a new run directory, is picked up; files are read
in the order they were created (the timestamp in their name).

The loader is `LegacyEventFileLoader`: `EventFileLoader` is the same plus a read-time migration
(`data_compat` turns every `simple_value` into a scalar tensor), which took 40% of the CPU in
benchmarks/bench_watchers.py. Without it, scalars come in both forms they are written in: torch's
SummaryWriter (verl, TRL, OpenRLHF, NeMo-RL) writes `simple_value`, TF2's `tf.summary.scalar` a
scalar tensor; both are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from rlguard.platform.watchers.files import inside, open_inside, shown
from rlguard.platform.watchers.points import Point, Warn, WatchWarning

EVENT_FILE = "events.out.tfevents.*"
_CREATED = re.compile(r"tfevents\.(\d+)")


def _created(path: Path) -> tuple[int, str]:
    found = _CREATED.search(path.name)
    return (int(found.group(1)) if found else 0, str(path))


def scalar(value: Any) -> Any:
    """The number a summary value holds; its raw content when it is not a single number."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return value.simple_value
    if kind == "tensor":
        from tensorboard.util import tensor_util

        array = tensor_util.make_ndarray(value.tensor)
        return array.item() if array.size == 1 else array.tolist()
    return f"<{kind}>"


class TensorBoardReader:
    def __init__(
        self, job_dir: Path, pattern: str, wanted: Callable[[str], bool], warn: Warn
    ) -> None:
        self.job_dir, self.pattern, self.wanted, self.warn = job_dir, pattern, wanted, warn
        self.loaders: dict[Path, Any] = {}
        self.opened: dict[Path, BinaryIO] = {}
        self.gone: set[Path] = set()
        self.seen_tags: set[str] = set()
        self.files_found: set[str] = set()  # job-relative: what a no-eval warning names

    def files(self) -> list[Path]:
        found = []
        for directory in (
            self.job_dir.glob(self.pattern)
            if "*" in self.pattern
            else [self.job_dir / self.pattern]
        ):
            if directory.is_dir() and inside(self.job_dir, directory):
                found += [p for p in directory.rglob(EVENT_FILE) if inside(self.job_dir, p)]
        return sorted(found, key=_created)

    def poll(self) -> list[Point]:
        from tensorboard.backend.event_processing.event_file_loader import (
            LegacyEventFileLoader,
        )

        points: list[Point] = []
        for path in self.files():
            if path not in self.loaders and (opened := open_inside(self.job_dir, path)):
                # the loader reads the file this checked descriptor holds, never the path again
                self.opened[path] = opened
                self.loaders[path] = LegacyEventFileLoader(f"/proc/self/fd/{opened.fileno()}")
                self.files_found.add(shown(self.job_dir, path))
        for path, loader in self.loaders.items():
            name = shown(self.job_dir, path)
            if not path.exists():
                if path not in self.gone:
                    self.gone.add(path)
                    self.warn(WatchWarning("file_gone", f"{name} disappeared", {"file": name}))
                continue
            try:
                points += self._read(loader, name)
            except Exception as exc:  # a hostile or broken record: tensorboard's parser raises
                message = f"{name}: an unreadable record ({type(exc).__name__}); skipped"
                self.warn(WatchWarning("bad_line", message, {"file": name}))
        return points

    def _read(self, loader: Any, name: str) -> list[Point]:
        points = []
        for event in loader.Load():
            if not event.HasField("summary"):
                continue
            for value in event.summary.value:
                if len(self.seen_tags) < 10_000:
                    self.seen_tags.add(value.tag)
                if self.wanted(value.tag):
                    points.append(Point(int(event.step), value.tag, scalar(value), name))
        return points
