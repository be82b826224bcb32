"""The training plane: CGPO (constrained multi-task RLHF with a mixture of judges) in TRL's shape,
its baselines (PPO, GRPO, DPO, a Bradley-Terry reward model), and EvalStop for HF/TRL trainers.

The public names load on first use (PEP 562): importing one submodule, as every runtime worker
does, must not pull in the cluster's stop rules and scipy with them.
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "CGPOConfig": "rlguard.train.config",
    "TaskConfig": "rlguard.train.config",
    "CGPOTrainer": "rlguard.train.trainer",
    "EvalStopCallback": "rlguard.train.callbacks",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
