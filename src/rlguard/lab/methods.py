"""The methods the lab compares, at one budget: RLHF against the proxy (PPO, GRPO) and CGPO's
three optimizers with the mixture of judges.

PPO and GRPO see only the proxy reward model; their tasks still run the judges, for the metrics.
CGPO tasks with precise judges get a lenient KL_max and open chat a strict one, as the paper
prescribes (it gives no numbers; ours are in sequence-level nats).
"""

from __future__ import annotations

from typing import Any

from rlguard.lab.tasks import TASKS

PROXY_METHODS = ("ppo", "grpo")
CGPO_METHODS = ("crpg", "crraft", "codpo")
METHODS = PROXY_METHODS + CGPO_METHODS

LENIENT_KL_MAX = 20.0
STRICT_KL_MAX = 4.0

OPTIMIZER_SETTINGS: dict[str, dict[str, Any]] = {
    "ppo": {"kl_coef": 0.01},
    "grpo": {"beta": 0.01},
    "crpg": {},
    "crraft": {},
    "codpo": {"beta": 0.1, "lam": 0.5},
}


RUN_SETTINGS: dict[str, dict[str, Any]] = {
    # PPO reuses each batch for several clipped updates (TRL's old PPOTrainer: ppo_epochs=4)
    "ppo": {"updates_per_batch": 2},
}


def task_settings(method: str, task: str) -> dict[str, Any]:
    """The TaskConfig fields a method sets for one task of the world."""
    settings: dict[str, Any] = {"optimizer": method, **OPTIMIZER_SETTINGS[method]}
    judges = list(TASKS[task].judges)
    settings["judges"] = judges
    if method in CGPO_METHODS:
        settings["kl_max"] = LENIENT_KL_MAX if judges else STRICT_KL_MAX
        settings["baseline"] = "reference"
    return settings
