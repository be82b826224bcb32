"""A task at run time: its prompts, judges, reward model and per-prompt baselines a_bar."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rlguard.judges.mixture import MixtureOfJudges
from rlguard.judges.registry import build_judge
from rlguard.train.config import TaskConfig
from rlguard.train.prompts import Prompts, load_prompts
from rlguard.train.rewards import RewardFunction, load_reward, score


@dataclass
class Baseline:
    """CGPO's a_bar for one prompt, with its reward and whether it passes the judges."""

    text: str
    reward: float
    passed: bool


@dataclass
class Task:
    config: TaskConfig
    prompts: Prompts
    eval_prompts: Prompts
    judges: MixtureOfJudges
    reward: RewardFunction
    gold: RewardFunction | None = None  # held-out quality the policy never trains on
    scores: dict[str, RewardFunction] = field(default_factory=dict)  # logged, never trained on
    baselines: dict[int, Baseline] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.config.name

    def side_scores(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[dict[str, Any]]
    ) -> dict[str, float]:
        """Each of `scores`' mean over these samples, as `score/<name>`."""
        return {
            f"score/{name}": float(score(fn, prompts, completions, metadata=metadata).mean())
            for name, fn in self.scores.items()
        }

    def sample(self, seed: int, step: int, index: int) -> list[int]:
        """The step's prompt rows: a pure function of (seed, step, task), so a resumed run sees
        exactly the batches the interrupted one would have."""
        rng = np.random.default_rng([seed, step, index])
        n = len(self.prompts)
        size = self.config.batch_size
        return rng.choice(n, size=size, replace=n < size).tolist()

    def add_baselines(self, rows: list[int], texts: list[str]) -> None:
        prompts = [self.prompts.texts[i] for i in rows]
        metadata = [self.prompts.metadata[i] for i in rows]
        rewards = score(self.reward, prompts, texts, metadata=metadata)
        passed = self.judges.judge(prompts, texts, metadata)
        for row, text, reward, verdict in zip(rows, texts, rewards.tolist(), passed, strict=True):
            self.baselines[row] = Baseline(text, reward, verdict == 1)

    def baseline_rewards(self, rows: list[int], device: torch.device | None = None) -> torch.Tensor:
        return torch.tensor([self.baselines[r].reward for r in rows], device=device)


def load_task(
    config: TaskConfig,
    where: str,
    reward: RewardFunction | None = None,
    gold: RewardFunction | None = None,
    device: torch.device | None = None,
    batch_size: int | None = None,
) -> Task:
    """A task, its reward and gold models (if models) on `device`, scoring `batch_size` texts
    per forward."""
    prompts = load_prompts(config.prompts, config.split, f"{where}.prompts")
    eval_prompts = (
        load_prompts(config.eval_prompts, config.split, f"{where}.eval_prompts")
        if config.eval_prompts
        else prompts
    )
    judges = MixtureOfJudges([build_judge(spec) for spec in config.judges])
    if reward is None:
        reward = load_reward(config.reward, f"{where}.reward", device, batch_size)
    if gold is None and config.gold is not None:
        gold = load_reward(config.gold, f"{where}.gold", device, batch_size)
    scores = {
        name: load_reward(spec, f"{where}.scores.{name}", device, batch_size)
        for name, spec in config.scores.items()
    }
    return Task(config, prompts, eval_prompts, judges, reward, gold, scores)
