"""A watched job's step timers: verl logs `timing_s/gen`, `timing_s/update_actor`, ... and its
length statistics with every step, in the same files as its evals; read beside them and reported
as the job's steps (`JobReporter.step`), so a watched job that never imports rlguard still records
what each step took (platform/steps.py) and can be exported to recalibrate the step model.

A step is reported once a later step has been read (verl logs a step's metrics in one call, but
a poll may land mid-write), and the last one when the watch ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlguard.runtime.calib.verl_logs import KEYS

# verl's name -> the step report's field (calibration's `reward_s` is not a column of the dataset)
TAGS = {tag: field for tag, field in KEYS.items() if field != "reward_s"}
TAGS |= {tag.replace("timing_s/", "timing/", 1): field for tag, field in TAGS.items()}  # older


class StepTimers:
    def __init__(self, on_step: Callable[..., Any]) -> None:
        self.on_step = on_step
        self.pending: dict[int, dict[str, float]] = {}
        self.reported: set[int] = set()

    @staticmethod
    def wanted(tag: str) -> bool:
        return tag in TAGS

    def seen(self, step: int, tag: str, value: float) -> None:
        if step not in self.reported:
            self.pending.setdefault(step, {})[TAGS[tag]] = value

    def flush(self, final: bool = False) -> None:
        """Report the steps a later step has followed (every pending one if `final`)."""
        newest = max(self.pending, default=None)
        for step in sorted(self.pending):
            if step == newest and not final:
                break
            self.reported.add(step)
            self.on_step(step, **self.pending.pop(step))
