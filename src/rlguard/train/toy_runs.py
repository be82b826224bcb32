"""Runs over the toy world: its SFT policy and CGPO configs, shared by the end-to-end tests and
the optimizer comparison benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlguard.train.config import CGPOConfig
from rlguard.train.offline import SFTConfig, run_sft
from rlguard.train.toy import build

TASK_JUDGES = {"math": "math", "style": "instructions"}


def sft_toy(root: Path, seed: int, epochs: int = 6) -> Path:
    paths = build(root, seed=seed)
    config = SFTConfig(
        stage="sft",
        output_dir=str(root / "sft"),
        model={"path": str(paths["base"])},
        data=str(paths["sft"]),
        epochs=epochs,
        batch_size=16,
        learning_rate=3e-3,
        seed=seed,
    )
    return run_sft(config)


def toy_config(root: Path, policy: Path, out: str, seed: int = 0, **overrides: Any) -> CGPOConfig:
    task = {"k": 4, "batch_size": 8, "max_new_tokens": 16, "baseline": "reference"}
    task.update(overrides.pop("task", {}))
    tasks = [
        {
            "name": name,
            "prompts": str(root / f"{name}_prompts.jsonl"),
            "eval_prompts": str(root / f"{name}_eval.jsonl"),
            "reward": {"function": "rlguard.train.toy:proxy_reward"},
            "judges": [judge],
            **task,
        }
        for name, judge in TASK_JUDGES.items()
    ]
    fields = {
        "output_dir": str(root / out),
        "policy": {"path": str(policy)},
        "tasks": tasks,
        "steps": 40,
        "learning_rate": 5e-4,
        "eval_every": 10,
        "save_every": 10,
        "eval_prompts": 64,
        "eval_temperature": 1.0,
        "seed": seed,
        "tensorboard": False,
    }
    fields.update(overrides)
    return CGPOConfig(**fields)
