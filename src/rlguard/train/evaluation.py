"""Periodic evaluation: the policy's answers to each task's held-out prompts, judged and scored.

This is the world's view of the policy. A task's eval score is its gold metric when it has one,
else its judges' pass rate; the run's score is their rho-weighted mean, and its proxy the
rho-weighted reward-model score (the number a hacking run keeps raising).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from rlguard.train.rewards import score
from rlguard.train.rollout import RolloutEngine, Rollouts
from rlguard.train.tasks import Task


@dataclass(frozen=True)
class Evaluation:
    score: float
    proxy: float
    metrics: dict[str, float]


@torch.no_grad()
def evaluate(
    tasks: Sequence[Task],
    rollout: RolloutEngine,
    prompts: int,
    temperature: float,
    seed: int,
    samples: int = 1,
    log_ratio: Callable[[Rollouts], torch.Tensor] | None = None,
) -> Evaluation:
    """`samples` answers per prompt; `log_ratio` (sequence log(pi / pi_ref) of each answer), when
    given, adds each task's KL to the reference, measured on the first answer to each held-out
    prompt (both models' forward passes over every answer would cost most of a sampling pass)."""
    torch.manual_seed(seed)  # every evaluation draws the same sampling noise
    metrics: dict[str, float] = {}
    score_sum = proxy_sum = 0.0
    for task in tasks:
        held_out = task.eval_prompts.take(list(range(min(prompts, len(task.eval_prompts)))))
        answers = rollout.generate(held_out.texts, samples, task.config.max_new_tokens, temperature)
        asked = [held_out.texts[i] for i in answers.prompt_index]
        metadata = [held_out.metadata[i] for i in answers.prompt_index]
        verdicts = task.judges.judge(asked, answers.texts, metadata)
        pass_rate = sum(v == 1 for v in verdicts) / len(verdicts)
        reward = float(score(task.reward, asked, answers.texts, metadata=metadata).mean())
        name = f"eval/{task.name}"
        metrics[f"{name}/constraint_satisfaction"] = pass_rate
        metrics[f"{name}/reward"] = reward
        if log_ratio is not None:
            first = answers.select(range(0, len(answers), samples))
            metrics[f"{name}/seq_kl"] = float(log_ratio(first).mean())
        metrics.update({f"{name}/judge/{k}": v for k, v in task.judges.pass_rates().items()})
        scores = task.side_scores(asked, answers.texts, metadata)
        metrics.update({f"{name}/{k}": v for k, v in scores.items()})
        task.judges.reset()
        task_score = pass_rate
        if task.gold is not None:
            task_score = float(score(task.gold, asked, answers.texts, metadata=metadata).mean())
            metrics[f"{name}/gold"] = task_score
        score_sum += task.config.weight * task_score
        proxy_sum += task.config.weight * reward
    total = sum(t.config.weight for t in tasks)
    return Evaluation(score_sum / total, proxy_sum / total, metrics)
