"""A recorder for a watcher's reports and warnings, and a factory of watchers over a tmp job dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlguard.platform.watchers import Watcher, WatchSpec, WatchWarning


class Recorder:
    def __init__(self) -> None:
        self.evals: list[dict] = []
        self.checkpoints: list[tuple[int, str, dict]] = []
        self.warnings: list[WatchWarning] = []

    def on_eval(self, **report) -> dict:
        self.evals.append(report)
        return {"action": "continue"}

    def on_checkpoint(self, step: int, path: str, metrics: dict) -> None:
        self.checkpoints.append((step, path, metrics))

    def on_warning(self, warning: WatchWarning) -> None:
        self.warnings.append(warning)

    @property
    def steps(self) -> list[int]:
        return [e["step"] for e in self.evals]

    @property
    def scores(self) -> list[float]:
        return [round(e["score"], 6) for e in self.evals]

    def codes(self) -> list[str]:
        return [w.code for w in self.warnings]


@pytest.fixture
def watch(tmp_path):
    """watch(job_dir=tmp_path, **spec) -> (watcher, recorder)."""

    def make(job_dir: Path | None = None, clock=None, **fields):
        recorder = Recorder()
        extra = {} if clock is None else {"clock": clock}
        watcher = Watcher(
            WatchSpec(**fields),
            job_dir or tmp_path,
            recorder.on_eval,
            recorder.on_checkpoint,
            recorder.on_warning,
            **extra,
        )
        return watcher, recorder

    return make
