"""The training plane: CGPO (constrained multi-task RLHF with a mixture of judges) in TRL's shape,
its baselines (PPO, GRPO, DPO, a Bradley-Terry reward model), and EvalStop for HF/TRL trainers."""

from rlguard.train.callbacks import EvalStopCallback
from rlguard.train.config import CGPOConfig, TaskConfig
from rlguard.train.trainer import CGPOTrainer

__all__ = ["CGPOConfig", "CGPOTrainer", "EvalStopCallback", "TaskConfig"]
