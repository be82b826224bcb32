"""What readers hand the watcher: scalar points, and warnings about the files they read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Point:
    """One logged value: `value` as read (not yet checked to be a finite number)."""

    step: int
    tag: str
    value: Any
    where: str  # the job-relative file it came from


@dataclass(frozen=True, slots=True)
class WatchWarning:
    """Something the job's owner should hear about; the watch goes on.

    codes: no_eval_yet, no_eval (no_eval.py), non_numeric, not_finite, bad_line, bad_step,
    file_gone, file_replaced, file_refused, file_too_large, step_backwards, tag_ambiguous,
    checkpoint_gone, no_total_steps.
    """

    code: str
    message: str
    data: dict[str, Any] = field(default_factory=dict)


Warn = Callable[[WatchWarning], None]
