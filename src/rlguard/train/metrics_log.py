"""Training metrics to JSONL (the record) and TensorBoard (the view).

On resume, rows past the checkpoint's step are dropped (they are about to be re-run), so every
step appears exactly once in the record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlguard.io import write_text


def _step(line: str) -> int | None:
    try:
        return json.loads(line)["step"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None  # a line torn by a crash mid-write


FRESH = -1  # the step to truncate after when a run starts over: keeps no row


def truncate_after(path: Path, step: int) -> None:
    """Keep only whole rows up to `step`."""
    if not path.is_file():
        return
    kept = [
        line
        for line in path.read_text().splitlines()
        if (s := _step(line)) is not None and s <= step
    ]
    write_text(path, "".join(line + "\n" for line in kept))


class MetricsLog:
    def __init__(self, output_dir: Path, tensorboard: bool, resume_step: int = 0) -> None:
        self.path = output_dir / "metrics.jsonl"
        truncate_after(self.path, resume_step)
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(output_dir / "tensorboard"), purge_step=resume_step + 1)

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"step": step, **metrics}) + "\n")
        if self.writer is not None:
            for name, value in metrics.items():
                if isinstance(value, int | float):
                    self.writer.add_scalar(name, value, step)
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
