"""What both executors share: the job, one RLHF step's phases after generation, and the report.

An executor runs generation (`run_generation`, what `RuntimeRollout` calls) or a whole step
(`run_step`: generation, reference + reward scoring, judges, one optimizer update) on function
processes of a `FunctionPool`. The two executors differ only in where each phase runs (held
colocated workers, or functions started on demand) and in how generation is split; the phases
themselves, and so the samples and the update, are the same code.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import ray
import torch
from transformers import AutoTokenizer

from rlguard.errors import InputError
from rlguard.judges.base import Metadata
from rlguard.runtime.executors.calls import ActorDied, as_completed
from rlguard.runtime.executors.faults import FaultPlan
from rlguard.runtime.executors.functions import (
    GENERATION,
    JUDGING,
    SCORING,
    TRAINING,
    GenerationSpec,
    JudgingSpec,
    RoleSpec,
    Scores,
    ScoringSpec,
    TrainingSpec,
    TrainResult,
    Weights,
)
from rlguard.runtime.executors.generation_phase import PhaseResult
from rlguard.runtime.executors.pool import Function, FunctionKind, FunctionPool
from rlguard.runtime.generation.generator import GroupRequest, SampleResult
from rlguard.runtime.generation.rollouts import to_rollouts
from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.report import StepReport
from rlguard.train.config import CGPOConfig, TaskConfig
from rlguard.train.objectives import NEEDS_BASELINE, ScoredRollouts
from rlguard.train.rollout import Rollouts

T = TypeVar("T")
WORKER = "worker"


@dataclass(frozen=True)
class StepJob:
    """The rest of a step after generation: the task's reward, judges and objective, and the
    optimizer. Optimizers that need CGPO's baselines a_bar or a critic run through
    `CGPOTrainer` with `RuntimeRollout` instead."""

    task: TaskConfig
    reference: str | None = None  # local HF directory; default: the policy's initial weights
    learning_rate: float = 1e-5
    max_grad_norm: float = 1.0
    updates_per_batch: int = 1

    def __post_init__(self) -> None:
        if self.task.optimizer in NEEDS_BASELINE or self.task.optimizer == "ppo":
            raise InputError(
                f"task {self.task.name!r}: optimizer {self.task.optimizer!r} needs baselines or a "
                "critic; run_step takes grpo or codpo (use CGPOTrainer with RuntimeRollout)"
            )

    @classmethod
    def from_config(cls, config: CGPOConfig, task: int = 0) -> StepJob:
        return cls(
            config.tasks[task],
            config.reference.path if config.reference else None,
            config.learning_rate,
            config.max_grad_norm,
            config.updates_per_batch,
        )


@dataclass(frozen=True)
class RuntimeConfig:
    """The policy every generation function holds, how big a function is, and (for `run_step`)
    the rest of the step."""

    policy: str  # local HF directory: weights and tokenizer
    max_batch: int = 16  # sequences one generation function decodes at once
    actors: int = 2  # serverful: the pool; serverless: the most generation functions at once
    gpus_per_actor: int = 1
    step: StepJob | None = None

    def __post_init__(self) -> None:
        for name in ("max_batch", "actors", "gpus_per_actor"):
            if getattr(self, name) < 1:
                raise InputError(f"runtime config: {name} must be >= 1, got {getattr(self, name)}")

    def worker(self, eos_token_id: int, dedup_prefill: bool) -> FunctionKind:
        """A function process holding every role of a step, as verl colocates them: generation,
        and with a step job scoring, judges and training. GPUs only where Ray has them."""
        roles: dict[str, RoleSpec] = {
            GENERATION: GenerationSpec(self.policy, eos_token_id, self.max_batch, dedup_prefill)
        }
        if self.step is not None:
            job = self.step
            roles[SCORING] = ScoringSpec(job.reference or self.policy, job.task.reward)
            roles[JUDGING] = JudgingSpec(tuple(job.task.judges))
            roles[TRAINING] = TrainingSpec(
                self.policy,
                job.task,
                job.learning_rate,
                job.max_grad_norm,
                job.updates_per_batch,
            )
        resources = ray.cluster_resources()
        has_gpus = resources.get("GPU", 0) > 0
        need = {"CPU": self.actors, "GPU": self.actors * self.gpus_per_actor if has_gpus else 0}
        for resource, amount in need.items():
            if amount > resources.get(resource, 0):
                raise InputError(
                    f"runtime config: actors={self.actors} need {amount:g} {resource}s, "
                    f"Ray has {resources.get(resource, 0):g}"
                )
        return FunctionKind(
            WORKER,
            roles,
            num_cpus=1.0,
            num_gpus=float(self.gpus_per_actor) if has_gpus else 0.0,
            billed_gpus=self.gpus_per_actor,
        )


@dataclass(frozen=True)
class StepBatch:
    """One step's prompts (a group of K samples each) and the seed their samples are keyed by.
    `max_new_tokens` gives each prompt its own token budget (default: the task's)."""

    prompts: list[str]
    metadata: list[Metadata]
    seed: int
    max_new_tokens: list[int] | None = None


@dataclass
class StepResult:
    samples: list[SampleResult]
    rollouts: Rollouts
    scores: Scores
    passed: torch.Tensor
    train: TrainResult
    report: StepReport


@dataclass
class _Window:
    """One metered run (a step, or a generation call)."""

    meter: Meter
    start: float
    phases: dict[str, float] = field(default_factory=dict)


class Executor(ABC):
    def __init__(self, config: RuntimeConfig, prices: Prices, fault: FaultPlan | None) -> None:
        self.config = config
        self.prices = prices
        self.fault = fault  # one-shot: the next generation phase's
        self.tokenizer = AutoTokenizer.from_pretrained(config.policy)
        self.tokenizer.padding_side = "left"
        self.last_phase: PhaseResult | None = None  # the last generation phase, for inspection
        self.cold_starts_s: list[float] = []  # every cold start so far, measured
        self.pool = self._make_pool()

    # ----- what an executor decides ------------------------------------------------------------

    @abstractmethod
    def _make_pool(self) -> FunctionPool: ...

    @abstractmethod
    def _generate(self, requests: list[GroupRequest]) -> PhaseResult: ...

    @abstractmethod
    def _hold(self, role: str) -> list[Function]:
        """The functions that run a phase of `role` (after generation)."""

    @abstractmethod
    def _let_go(self, functions: list[Function]) -> None: ...

    @abstractmethod
    def _bill(self, meter: Meter, since: float, end: float) -> tuple[float, float]:
        """(GPU-seconds, USD) of a window that began at `since` (gaps included) and ends now."""

    # ----- the interface -----------------------------------------------------------------------

    def load_weights(self, weights: Weights) -> None:
        """The policy's current weights, for every generation function's next call."""
        self.pool.set_state(GENERATION, ray.put(weights))

    def policy_weights(self) -> Weights:
        """The policy the generation functions hold now: the last update's, or the last loaded
        (after `run_step`, the trained weights to save)."""
        state = self.pool.states.get(GENERATION)
        if state is None:
            raise ValueError("no weights yet: the functions hold the policy's initial weights")
        return ray.get(state)

    def take_fault(self) -> FaultPlan | None:
        fault, self.fault = self.fault, None
        return fault

    def run_generation(self, groups: list[GroupRequest]) -> tuple[list[SampleResult], StepReport]:
        window = self._begin()
        phase = self._timed(window, "generation", self._generate, groups)
        return phase.samples, self._end(window, phase)

    def run_step(self, batch: StepBatch) -> StepResult:
        job = self.config.step
        if job is None:
            raise ValueError("run_step needs RuntimeConfig.step (the task, reward and judges)")
        task = job.task
        prompt_ids = [
            self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in batch.prompts
        ]
        budgets = batch.max_new_tokens or [task.max_new_tokens] * len(prompt_ids)
        requests = [
            GroupRequest(i, ids, task.k, budget, task.temperature, batch.seed)
            for i, (ids, budget) in enumerate(zip(prompt_ids, budgets, strict=True))
        ]
        window = self._begin()
        phase = self._timed(window, "generation", self._generate, requests)
        rollouts = to_rollouts(phase.samples, prompt_ids, self.tokenizer)
        prompts = [batch.prompts[i] for i in rollouts.prompt_index]
        metadata = [batch.metadata[i] for i in rollouts.prompt_index]
        scores = self._timed(window, "scoring", self._score, rollouts, prompts)
        verdicts = self._timed(window, "judging", self._judge, prompts, rollouts.texts, metadata)
        passed = torch.tensor([v == 1 for v in verdicts])
        scored = ScoredRollouts(
            rollouts, task.k, list(batch.prompts), passed, scores.rewards, scores.ref_logp
        )
        trained = self._timed(window, "training", self._train, scored)
        report = self._end(window, phase)
        return StepResult(phase.samples, rollouts, scores, passed, trained, report)

    def close(self) -> None:
        self.pool.close()

    # ----- windows and phases ------------------------------------------------------------------

    def _begin(self) -> _Window:
        window = _Window(Meter(self.prices), time.perf_counter())
        self.pool.begin(window.meter, window.start)
        return window

    def _end(self, window: _Window, phase: PhaseResult) -> StepReport:
        end = time.perf_counter()
        since = self.pool.closed_at if self.pool.closed_at is not None else window.start
        started = list(self.pool.started)
        self.pool.end(end)
        gpu_s, usd = self._bill(window.meter, since, end)
        self.last_phase = phase
        self.cold_starts_s += [f.cold_start_s for f in started]
        return StepReport(
            step_s=end - window.start,
            gpu_s=gpu_s,
            cost_usd=usd,
            phases=window.phases,
            cold_starts=len(started),
            actor_busy_s=phase.actor_busy_s(),
            actor_idle_s=phase.actor_idle_s(),
            prefill_tokens=phase.prefill_tokens,
            decode_tokens=phase.decode_tokens,
        )

    @staticmethod
    def _timed(window: _Window, name: str, run: Callable[..., T], *args: Any) -> T:
        start = time.perf_counter()
        out = run(*args)
        window.phases[name] = time.perf_counter() - start
        return out

    def _spread(
        self, role: str, rows: int, call: Callable[[Function, list[int]], ray.ObjectRef]
    ) -> list[Any]:
        """Split `rows` evenly over the role's functions; results in row order."""
        functions = self._hold(role)
        chunks = equal_count_split(rows, len(functions))
        pending = {
            call(f, chunk): (i, f, time.perf_counter())
            for i, (f, chunk) in enumerate(zip(functions, chunks, strict=True))
            if chunk
        }
        results: dict[int, Any] = {}
        for done in as_completed(pending):
            index, function, started = done.key
            if isinstance(done.value, ActorDied):
                raise RuntimeError(f"{role} function {function.fid} died: {done.value.error}")
            self.pool.busy(function, started, done.at)
            results[index] = done.value
        self._let_go(functions)
        return [results[i] for i in sorted(results)]

    def _score(self, rollouts: Rollouts, prompts: Sequence[str]) -> Scores:
        parts = self._spread(
            SCORING,
            len(rollouts),
            lambda f, rows: f.actor.score.remote(rollouts.select(rows), [prompts[r] for r in rows]),
        )
        return Scores(torch.cat([p.ref_logp for p in parts]), torch.cat([p.rewards for p in parts]))

    def _judge(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[int]:
        parts = self._spread(
            JUDGING,
            len(prompts),
            lambda f, rows: f.actor.judge.remote(
                [prompts[r] for r in rows],
                [completions[r] for r in rows],
                [metadata[r] for r in rows],
            ),
        )
        return [v for part in parts for v in part]

    def _train(self, batch: ScoredRollouts) -> TrainResult:
        """One update on one function; its new weights and state go out through the object
        store to the generation functions and to whichever function trains next."""
        (function,) = self._hold(TRAINING)
        started = time.perf_counter()
        result = function.actor.train.remote(batch)
        weights = function.actor.policy_weights.remote()
        state = function.actor.training_state.remote()
        ray.wait([result, weights, state], num_returns=3, fetch_local=False)
        self.pool.busy(function, started, time.perf_counter())
        self.pool.set_state(GENERATION, weights)
        self.pool.set_state(TRAINING, state, holder=function)
        self._let_go([function])
        return ray.get(result)
