"""Fault injection: a generation function that dies mid-generation, as a preempted spot GPU or an
OOM-killed worker does. The executors must replace it and re-run its groups."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NoReturn


@dataclass(frozen=True)
class FaultPlan:
    """Kill the `function`-th generation function of the next generation phase (in assignment
    order) after `after_steps` decode steps of its first call. One-shot: the replacement and
    every later call run clean."""

    function: int
    after_steps: int

    def __post_init__(self) -> None:
        if self.function < 0 or self.after_steps < 1:
            raise ValueError(f"bad fault plan: function={self.function}, after={self.after_steps}")

    def crash(self) -> NoReturn:
        """The process exits at once, without cleanup: Ray sees the actor die."""
        os._exit(1)
