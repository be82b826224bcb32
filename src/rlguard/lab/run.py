"""One training run of the lab: a method and a seed on a built world, watched by stop rules.

The stop rules watch the run online (each sees the eval events as they arrive) but do not stop
it: the lab needs the whole curve to say whether a rule stopped too early, too late, or rightly.
A run's record is written atomically when it finishes; an interrupted run resumes from its last
checkpoint (the trainer's own resume), and a finished one is not run again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import RULES, RuleParams
from rlguard.cluster.stopping.base import StopRule
from rlguard.io import write_json
from rlguard.lab.gold import GoldScorer
from rlguard.lab.methods import RUN_SETTINGS, task_settings
from rlguard.lab.tasks import TASKS
from rlguard.lab.world import World
from rlguard.train.config import CGPOConfig

if TYPE_CHECKING:  # the trainer imports torch, which a run's worker loads only when it trains
    from rlguard.train.trainer import CGPOTrainer, EvalHook


def _watched_rules() -> dict[str, StopRule]:
    """EvalStop with k=2, the lab's (a run here has 11 evals, and a hacking run's decline lasts
    2-4 of them before it flattens: three consecutive declines are often not there to count),
    EvalStop as the cluster plane runs it (k=3), and our GaoTrend detector."""
    return {
        "evalstop": RULES["evalstop"](RuleParams()),
        "evalstop-k2": RULES["evalstop"](RuleParams(k=2)),
        "gao-trend": RULES["gao-trend"](RuleParams()),
    }


@dataclass(frozen=True)
class Budget:
    """What every method gets: the same steps, samples, token budget and learning rate."""

    steps: int = 60
    prompts_per_task: int = 4
    k: int = 4
    max_new_tokens: int = 48
    learning_rate: float = 2e-4
    # Eval noise (sd ~0.03 with one answer per prompt) is the size of a hacking run's decline
    # between evals. Evals every 6 steps with two answers per prompt cost what evals every 4 with
    # one did, and see a steady decline 1.5x larger against noise 1/sqrt(2) as large.
    eval_every: int = 6
    eval_prompts: int = 48
    eval_samples: int = 2


@dataclass
class StopWatch:
    """An eval hook that records the first step each rule would stop at, without stopping (its
    last eval included: there a rule only says it would)."""

    rules: dict[str, StopRule] = field(default_factory=_watched_rules)
    stops: dict[str, int | None] = field(default_factory=dict)

    def __call__(self, event: dict[str, Any]) -> None:
        for name, rule in self.rules.items():
            self.stops.setdefault(name, None)
            if rule.observe(EvalEvent(**event)).flagged and self.stops[name] is None:
                self.stops[name] = event["step"]


def run_config(world: World, method: str, seed: int, budget: Budget, out: Path) -> CGPOConfig:
    tasks = [
        {
            "name": task,
            "prompts": str(world.prompts(task, "train")),
            "eval_prompts": str(world.prompts(task, "eval")),
            "reward": {"model": str(world.reward_model)},
            "k": budget.k,
            "batch_size": budget.prompts_per_task,
            "max_new_tokens": budget.max_new_tokens,
            **task_settings(method, task),
        }
        for task in TASKS
    ]
    return CGPOConfig(
        output_dir=str(out),
        policy={"path": str(world.policy)},
        tasks=tasks,
        steps=budget.steps,
        learning_rate=budget.learning_rate,
        eval_every=budget.eval_every,
        save_every=budget.eval_every,
        eval_prompts=budget.eval_prompts,
        eval_samples=budget.eval_samples,
        eval_temperature=1.0,  # the policy is a distribution; evals share their sampling noise
        seed=seed,
        tensorboard=False,
        run_name=f"{method}/seed{seed}",
        **RUN_SETTINGS.get(method, {}),
    )


def curve(out: Path, steps: int) -> dict[str, list[float]]:
    """Per eval: progress, gold (the eval score), proxy, KL to the initial policy (measured on the
    eval's own answers) and the judges' satisfaction."""
    events = [json.loads(line) for line in (out / "eval_events.jsonl").open()]
    evals = {
        m["step"]: m
        for line in (out / "metrics.jsonl").open()
        if "eval/score" in (m := json.loads(line))
    }
    judged = [name for name, task in TASKS.items() if task.judges]
    at = [evals[e["step"]] for e in events]
    return {
        "step": [e["step"] for e in events],
        "progress": [e["step"] / steps for e in events],
        "gold": [e["score"] for e in events],
        "proxy": [e["proxy"] for e in events],
        "kl": [max(_task_mean(m, "eval/{}/seq_kl", TASKS), 0.0) for m in at],
        "satisfaction": [_task_mean(m, "eval/{}/constraint_satisfaction", judged) for m in at],
    }


def _task_mean(metrics: dict[str, float], key: str, tasks: Iterable[str]) -> float:
    """The mean over tasks of a per-task metric (`key` has a {} for the task's name)."""
    values = [metrics[key.format(t)] for t in tasks]
    return sum(values) / len(values)


def lab_trainer(
    world: World,
    config: CGPOConfig,
    eval_hooks: Sequence[EvalHook] = (),
    should_preempt: Callable[[], bool] | None = None,
    save_hooks: Sequence[Callable[[int, Path], None]] = (),
) -> CGPOTrainer:
    """The trainer of a lab run: every task rewarded by the world's proxy, scored by its gold."""
    from rlguard.train.rewards import ClassifierReward
    from rlguard.train.trainer import CGPOTrainer

    proxy = ClassifierReward.from_pretrained(str(world.reward_model))
    gold = GoldScorer(world.rows())
    return CGPOTrainer(
        config,
        reward_funcs=dict.fromkeys(TASKS, proxy),
        gold_funcs=dict.fromkeys(TASKS, gold),
        eval_hooks=list(eval_hooks),
        progress=False,
        should_preempt=should_preempt,
        save_hooks=save_hooks,
    )


RECORD = "record.json"  # a run's record, written last


def finished(out: Path) -> dict[str, Any] | None:
    """The record of the run in `out` if it has finished."""
    record_path = out / RECORD
    return json.loads(record_path.read_text()) if record_path.is_file() else None


def run(world: World, method: str, seed: int, budget: Budget, out: Path) -> dict[str, Any]:
    """Train (or resume) one run and return its record; a finished run's record is reused."""
    if (record := finished(out)) is not None:
        return record
    import torch

    torch.set_num_threads(1)
    watch = StopWatch()
    config = run_config(world, method, seed, budget, out / "train")
    summary = lab_trainer(world, config, eval_hooks=[watch]).train()
    record = {
        "method": method,
        "seed": seed,
        "budget": asdict(budget),
        "curve": curve(out / "train", budget.steps),
        "stops": watch.stops,
        "wall_s": summary["wall_s"],
    }
    write_json(out / RECORD, record)
    return record
