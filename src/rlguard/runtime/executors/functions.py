"""The phases of one synchronous RLHF step as the roles a function process can host.

- GenerationFunction: a policy copy and a `GroupGenerator` (deduplicated prefill, deterministic
  sampling, cut at tau and resume from a prefix).
- ScoringFunction: the frozen reference's log-probs and the reward model's scores.
- JudgeFunction: the task's mixture of judges.
- TrainingFunction: the policy, its optimizer and the task's objective; its state leaves through
  the object store, so a serverless training function can be released between steps.

A `FunctionHost` is the Ray actor: one process holding the roles of a step, colocated as verl's
workers hold them (the simulator's functions are the same workers). Building the roles is the
model-load part of a cold start; `ready` reports how long it took. Each role imports the training
plane's modules when it is built, so a generation-only function (`RuntimeRollout`) does not pay
for importing them at every cold start.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from rlguard.runtime.executors.faults import FaultPlan
from rlguard.runtime.generation.generator import GenerationOutput, GroupGenerator, GroupRequest
from rlguard.runtime.policies.migration import should_cut

if TYPE_CHECKING:
    from rlguard.judges.base import Metadata
    from rlguard.judges.registry import JudgeSpec
    from rlguard.train.config import RewardSpec, TaskConfig
    from rlguard.train.objectives import ScoredRollouts
    from rlguard.train.rollout import Rollouts

GENERATION, SCORING, JUDGING, TRAINING = "generation", "scoring", "judging", "training"
Weights = dict[str, torch.Tensor]


def device() -> torch.device:
    """The accelerator Ray gave this process (CUDA_VISIBLE_DEVICES), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_model(path: str) -> PreTrainedModel:
    return AutoModelForCausalLM.from_pretrained(path).to(device())


class RoleSpec(Protocol):
    """How to build a role in a fresh process."""

    def build(self) -> Any: ...


# ----- generation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationSpec:
    model: str  # local HF directory: architecture and initial weights
    eos_token_id: int
    max_batch: int
    dedup_prefill: bool = True

    def build(self) -> GenerationFunction:
        return GenerationFunction(self)


@dataclass
class SlotUse:
    """How full a generate call kept its batch, from GroupGenerator's per-step callback (which
    also applies the cut rule and an injected fault). A decode step runs `active` of `max_batch`
    slots; `idle_slot_steps` sums the empty ones and `utilized_s` weighs each step's wall time by
    its share of full slots."""

    max_batch: int
    tau: float | None
    fault: FaultPlan | None
    finished_before: int  # sequences done before the next step (resumed finished ones at first)
    decode_steps: int = 0
    idle_slot_steps: int = 0
    utilized_s: float = 0.0
    last_t: float = field(default_factory=time.perf_counter)

    def __call__(self, finished: int, total: int) -> bool:
        now = time.perf_counter()
        active = min(self.max_batch, total - self.finished_before)
        self.decode_steps += 1
        self.idle_slot_steps += self.max_batch - active
        self.utilized_s += (now - self.last_t) * active / self.max_batch
        self.last_t, self.finished_before = now, finished
        if self.fault is not None and self.decode_steps == self.fault.after_steps:
            self.fault.crash()
        return self.tau is not None and should_cut(finished, total, self.tau)


@dataclass
class ActorGeneration:
    """One generate call: the samples and how full its batch was (for idle accounting)."""

    output: GenerationOutput
    idle_slot_steps: int
    utilized_s: float


def done_on_arrival(requests: Sequence[GroupRequest], eos_token_id: int) -> int:
    """Resumed samples whose prefix already ended (EOS or the token budget): they never decode."""
    return sum(
        1
        for request in requests
        for tokens in request.prefix or []
        if tokens and (tokens[-1] == eos_token_id or len(tokens) >= request.max_new_tokens)
    )


class GenerationFunction:
    def __init__(self, spec: GenerationSpec) -> None:
        self.spec = spec
        self.model = load_model(spec.model).eval()
        self.generator = GroupGenerator(
            self.model,
            spec.eos_token_id,
            dedup_prefill=spec.dedup_prefill,
            max_batch=spec.max_batch,
        )

    def load_state(self, weights: Weights) -> None:
        """The trainer's latest policy weights."""
        self.model.load_state_dict(weights)

    def generate(
        self,
        requests: Sequence[GroupRequest],
        tau: float | None = None,
        fault: FaultPlan | None = None,
    ) -> ActorGeneration:
        """Sample the groups; with `tau`, stop once that share of the sequences has finished
        (the rest come back unfinished, to be migrated)."""
        done = done_on_arrival(requests, self.spec.eos_token_id)
        slots = SlotUse(self.spec.max_batch, tau, fault, done)
        output = self.generator.generate(list(requests), on_step=slots)
        return ActorGeneration(output, slots.idle_slot_steps, slots.utilized_s)


# ----- scoring and judging ----------------------------------------------------------------------


@dataclass(frozen=True)
class ScoringSpec:
    reference: str  # local HF directory of the frozen reference policy
    reward: RewardSpec

    def build(self) -> ScoringFunction:
        return ScoringFunction(self)


@dataclass
class Scores:
    ref_logp: torch.Tensor  # [N, C]
    rewards: torch.Tensor  # [N]


class ScoringFunction:
    def __init__(self, spec: ScoringSpec) -> None:
        from rlguard.train.rewards import load_reward

        self.reference = load_model(spec.reference).eval().requires_grad_(False)
        self.reward = load_reward(spec.reward, "reward")

    @torch.no_grad()
    def score(self, rollouts: Rollouts, prompts: Sequence[str]) -> Scores:
        """Reference log-probs and rewards of each row (`prompts[i]` is row i's prompt)."""
        from rlguard.train.logprobs import token_logprobs
        from rlguard.train.rewards import score

        ref_logp = token_logprobs(self.reference, rollouts).cpu()
        return Scores(ref_logp, score(self.reward, prompts, rollouts.texts))


@dataclass(frozen=True)
class JudgingSpec:
    judges: tuple[JudgeSpec, ...]

    def build(self) -> JudgeFunction:
        return JudgeFunction(self)


class JudgeFunction:
    def __init__(self, spec: JudgingSpec) -> None:
        from rlguard.judges.mixture import MixtureOfJudges
        from rlguard.judges.registry import build_judge

        self.judges = MixtureOfJudges([build_judge(s) for s in spec.judges])

    def judge(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[int]:
        return self.judges.judge(prompts, completions, metadata)


# ----- training ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingSpec:
    policy: str  # local HF directory: initial weights and tokenizer
    task: TaskConfig  # its optimizer (objective) and the objective's hyper-parameters
    learning_rate: float
    max_grad_norm: float
    updates_per_batch: int = 1

    def build(self) -> TrainingFunction:
        return TrainingFunction(self)


@dataclass
class TrainResult:
    loss: float
    grad_norm: float
    stats: dict[str, float]


class TrainingFunction:
    """The optimizer step of CGPOTrainer.training_step for one task."""

    def __init__(self, spec: TrainingSpec) -> None:
        from rlguard.train.objectives import Models

        self.spec = spec
        tokenizer = AutoTokenizer.from_pretrained(spec.policy)
        tokenizer.padding_side = "left"
        self.models = Models(load_model(spec.policy).train(), tokenizer)
        params = [p for p in self.models.policy.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=spec.learning_rate, fused=True)

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Policy and optimizer as a previous training function left them."""
        self.models.policy.load_state_dict(state["policy"])
        self.optimizer.load_state_dict(state["optimizer"])

    def state(self) -> dict[str, Any]:
        return {"policy": self.policy_weights(), "optimizer": self.optimizer.state_dict()}

    def policy_weights(self) -> Weights:
        return {k: v.detach().cpu() for k, v in self.models.policy.state_dict().items()}

    def train(self, batch: ScoredRollouts) -> TrainResult:
        """The trainer's update on one task: the same micro-batch path, one process, rho."""
        from rlguard.train.accumulate import accumulate, optimizer_step
        from rlguard.train.devices import to_device
        from rlguard.train.objectives import OBJECTIVES

        task, policy = self.spec.task, self.models.policy
        batch = to_device(batch, policy.device)  # it arrives from the driver on the CPU
        for _ in range(self.spec.updates_per_batch):
            self.optimizer.zero_grad(set_to_none=True)
            stats = accumulate(
                OBJECTIVES[task.optimizer],
                self.models,
                batch,
                task,
                None,
                backward=lambda loss: (task.weight * loss).backward(),
                allsum=lambda tensor: tensor,
            )
            grad_norm = optimizer_step(self.optimizer, self.spec.max_grad_norm)
        loss = stats.pop("loss")
        return TrainResult(loss, grad_norm, stats)


# ----- the process ------------------------------------------------------------------------------


class FunctionHost:
    """One function process (wrap with `ray.remote(...).options(...)`): the roles it holds."""

    def __init__(self, specs: Mapping[str, RoleSpec]) -> None:
        torch.set_num_threads(1)  # one core per function; tiny models gain nothing from more
        start = time.perf_counter()
        self.roles = {role: spec.build() for role, spec in specs.items()}
        self.load_s = time.perf_counter() - start

    def ready(self) -> float:
        """Seconds its roles took to build (the model-load part of the cold start)."""
        return self.load_s

    def load_state(self, role: str, state: Any) -> None:
        self.roles[role].load_state(state)

    def generate(
        self, requests: Sequence[GroupRequest], tau: float | None, fault: FaultPlan | None
    ) -> ActorGeneration:
        return self.roles[GENERATION].generate(requests, tau, fault)

    def score(self, rollouts: Rollouts, prompts: Sequence[str]) -> Scores:
        return self.roles[SCORING].score(rollouts, prompts)

    def judge(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[int]:
        return self.roles[JUDGING].judge(prompts, completions, metadata)

    def train(self, batch: ScoredRollouts) -> TrainResult:
        return self.roles[TRAINING].train(batch)

    def policy_weights(self) -> Weights:
        return self.roles[TRAINING].policy_weights()

    def training_state(self) -> dict[str, Any]:
        return self.roles[TRAINING].state()
