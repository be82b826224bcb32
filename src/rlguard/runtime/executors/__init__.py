"""Executors of one synchronous RLHF step on Ray: the serverful verl-style baseline and the
serverless RLHFless executor, behind one interface (`Executor`); the roles a function process
hosts; `RuntimeRollout`, the trainer's rollout engine on them; and `rlguard runtime bench`.

The public names load on first use (PEP 562): importing this package imports neither torch nor Ray.
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "Executor": "rlguard.runtime.executors.base",
    "RuntimeConfig": "rlguard.runtime.executors.base",
    "StepBatch": "rlguard.runtime.executors.base",
    "StepJob": "rlguard.runtime.executors.base",
    "StepResult": "rlguard.runtime.executors.base",
    "ServerfulExecutor": "rlguard.runtime.executors.serverful",
    "ServerlessExecutor": "rlguard.runtime.executors.serverless",
    "RuntimeRollout": "rlguard.runtime.executors.rollout_engine",
    "FaultPlan": "rlguard.runtime.executors.faults",
    "BenchSettings": "rlguard.runtime.executors.bench",
    "run_bench": "rlguard.runtime.executors.bench",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
