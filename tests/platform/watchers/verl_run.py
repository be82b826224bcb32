"""Log like a verl PPO run, with verl's own `Tracking` (tensorboard + file backends).

Run where verl imports (verl 0.9.1 from PyPI imports on CPU with orjson, tensordict, pyvers,
omegaconf and antlr4 beside it): `python verl_run.py JOB_DIR START END`. It follows
`RayPPOTrainer.fit` (verl/trainer/ppo/ray_trainer.py): a validation at the start step
(val_before_train, also after a resume), then per step the train metrics, the validation every
TEST_FREQ steps, the checkpoint every SAVE_FREQ steps as `_save_checkpoint` lays it out
(`checkpoints/{project}/{experiment}/global_step_N/actor/`, `data.pt` last,
`latest_checkpointed_iteration.txt`), then `logger.log(metrics, step)`. The metric values are
scripted; the files are the ones verl's logger classes write. A second call with START > 0 is a
resumed attempt: verl's FileLogger reopens its JSONL with "wb" (truncates it) and its
TensorBoard adapter starts a new event file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

PROJECT, EXPERIMENT = "demo", "gsm8k"
TEST_FREQ, SAVE_FREQ = 5, 10
# the validation curve of each attempt (a resumed attempt re-validates: other values)
VAL = {1: {0: 0.30, 5: 0.45, 10: 0.60, 15: 0.55}, 2: {10: 0.61, 15: 0.58, 20: 0.52}}


def val_metrics(attempt: int, step: int) -> dict:
    score = np.float64(VAL[attempt][step])
    return {
        "val-core/openai/gsm8k/reward/mean@1": score,
        "val-aux/openai/gsm8k/reward/std@1": np.float64(0.1),
        "val-aux/num_turns/mean": np.int64(1),
    }


def save_checkpoint(step: int) -> None:
    folder = Path("checkpoints", PROJECT, EXPERIMENT, f"global_step_{step}")
    (folder / "actor").mkdir(parents=True, exist_ok=True)
    (folder / "data.pt").write_bytes(b"dataloader state")
    Path("checkpoints", PROJECT, EXPERIMENT, "latest_checkpointed_iteration.txt").write_text(
        str(step)
    )


def main(job_dir: str, start: int, end: int) -> None:
    os.chdir(job_dir)
    from verl.utils.tracking import Tracking

    attempt = 1 if start == 0 else 2
    logger = Tracking(PROJECT, EXPERIMENT, default_backend=["tensorboard", "file"], config={})
    logger.log(data=val_metrics(attempt, start), step=start)
    for step in range(start + 1, end + 1):
        metrics = {
            "critic/score/mean": np.float64(0.2 + step * 0.05),  # the proxy keeps rising
            "actor/ppo_kl": 0.001 * step,
            "actor/pg_loss": -0.01 * step,
            "training/global_step": step,
            "training/epoch": 0,
        }
        if step % TEST_FREQ == 0:
            metrics.update(val_metrics(attempt, step))
        if step % SAVE_FREQ == 0:
            save_checkpoint(step)
        logger.log(data=metrics, step=step)
    del logger  # Tracking.__del__ closes the backends


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
