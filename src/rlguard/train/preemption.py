"""SIGTERM as a request to checkpoint and yield, the way schedulers preempt cooperatively.

Ray, Slurm and Kubernetes all send SIGTERM before they kill. A run that catches it finishes its
current step, saves a checkpoint and exits with PREEMPTED_EXIT (128 + SIGTERM, what a shell
reports for a terminated process), so whoever sent it can tell "yielded, resume me" from "done".
"""

from __future__ import annotations

import signal

PREEMPTED_EXIT = 128 + signal.SIGTERM


class SigtermFlag:
    """Callable as `should_preempt`: true once SIGTERM has arrived (installed on construction)."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.requested = True

    def __call__(self) -> bool:
        return self.requested
