"""Executors of one synchronous RLHF step on Ray: the serverful verl-style baseline and the
serverless RLHFless executor, behind one interface (`Executor`)."""

from rlguard.runtime.executors.base import (
    Executor,
    RuntimeConfig,
    StepBatch,
    StepJob,
    StepResult,
)
from rlguard.runtime.executors.serverful import ServerfulExecutor
from rlguard.runtime.executors.serverless import ServerlessExecutor

__all__ = [
    "Executor",
    "RuntimeConfig",
    "ServerfulExecutor",
    "ServerlessExecutor",
    "StepBatch",
    "StepJob",
    "StepResult",
]
