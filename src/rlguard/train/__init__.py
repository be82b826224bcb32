"""The training plane: CGPO (constrained multi-task RLHF with a mixture of judges) in TRL's shape,
its baselines (PPO, GRPO, DPO, a Bradley-Terry reward model), and EvalStop for HF/TRL trainers.

The public names load on first use (PEP 562): importing one submodule, as every runtime worker
does, must not pull in the cluster's stop rules and scipy with them.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "CGPOConfig": "rlguard.train.config",
    "TaskConfig": "rlguard.train.config",
    "CGPOTrainer": "rlguard.train.trainer",
    "EvalStopCallback": "rlguard.train.callbacks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rlguard.train' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
