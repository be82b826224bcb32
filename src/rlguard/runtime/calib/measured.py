"""The measurements as data: public, measured verl steps with their per-phase times, length
statistics and settings (runtime/data/verl_steps.csv), each row with its source.

One row is one logged training step of one run. Times are verl's own timers in seconds
(`timing_s/...`); settings a run's source does not state are blank, and the models fill them with
the defaults of the verl version the run used (see `EngineArgs` in calib/coefficients.py) or, for
the trainer's layout, with verl's GRPO example (`TrainerSettings` in calib/comm.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.resources import files
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlguard.errors import InputError
from rlguard.runtime.calib.comm import (
    EXAMPLE_MICRO_BATCH,
    EXAMPLE_MINI_BATCH,
    TrainerSettings,
    TrainLayout,
)
from rlguard.runtime.policies.datafile import read_csv_rows

SHIPPED = files("rlguard.runtime") / "data" / "verl_steps.csv"
PHASES = ("generation", "scoring", "training")


class MeasuredStep(BaseModel):
    """One measured verl step. `model` and `gpu` are keys of runtime/sim/hardware.py's catalog."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str = Field(min_length=1)
    step: int = Field(ge=1)
    source: str = Field(min_length=1)
    model: str
    gpu: str
    n_gpus: int = Field(gt=0)
    rollout_tp: int = Field(gt=0)
    engine: Literal["vllm", "sglang"] = "vllm"
    vllm_engine: Literal["v0", "v1"] = Field(
        "v0", description="vLLM's engine generation, as the run's log shows it (V1 from 0.8)"
    )
    enforce_eager: bool | None = None
    max_num_seqs: int | None = Field(None, gt=0)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    algorithm: Literal["grpo", "ppo", "dapo", "rloo", "reinforce++"]
    prompts_per_step: int = Field(gt=0)
    n_samples: int = Field(gt=0)
    max_prompt_length: int = Field(gt=0)
    max_response_length: int = Field(gt=0)
    prompt_length_mean: float = Field(gt=0)
    response_length_mean: float = Field(gt=0)
    response_length_max: float | None = Field(None, gt=0)
    response_clip_ratio: float | None = Field(None, ge=0, le=1)
    gen_s: float | None = Field(None, gt=0)
    generate_sequences_s: float | None = Field(None, gt=0)
    reshard_s: float | None = Field(None, ge=0)
    reward_s: float | None = Field(None, ge=0)
    old_log_prob_s: float | None = Field(None, ge=0)
    ref_s: float | None = Field(None, ge=0)
    values_s: float | None = Field(None, ge=0)
    adv_s: float | None = Field(None, ge=0)
    update_critic_s: float | None = Field(None, ge=0)
    update_actor_s: float | None = Field(None, gt=0)
    testing_s: float | None = Field(None, ge=0)
    step_s: float | None = Field(None, gt=0)
    mfu_actor: float | None = Field(None, gt=0, description="verl's perf/mfu/actor")
    actor_strategy: Literal["fsdp", "fsdp2", "megatron"] = "fsdp"
    train_tp: int = Field(1, gt=0, description="Megatron tensor parallel of the actor")
    train_pp: int = Field(1, gt=0, description="Megatron pipeline stages of the actor")
    train_vpp: int = Field(1, gt=0, description="Megatron virtual stages per pipeline stage")
    micro_batch_per_gpu: int = Field(EXAMPLE_MICRO_BATCH, gt=0, description="sequences")
    mini_batch_prompts: int = Field(EXAMPLE_MINI_BATCH, gt=0, description="per optimizer step")
    log_prob_micro_batch_per_gpu: int | None = Field(
        None, gt=0, description="scoring's micro-batch in sequences; blank: micro_batch_per_gpu"
    )
    gradient_checkpointing: bool = Field(
        False,
        description="the update recomputes activations (effective: Megatron's "
        "recompute_granularity, not the flag it ignores)",
    )
    param_offload: bool = False
    lora_rank: int = Field(0, ge=0)
    remove_padding: bool = Field(True, description="the actor's and reference's use_remove_padding")
    critic_remove_padding: bool = Field(True, description="critic.model.use_remove_padding")
    generation_out_of_domain: str = Field(
        "",
        description="why no generation fit uses this run (its scoring and training are fitted; "
        "leave-one-run-out still predicts its generation)",
    )
    held_out: bool = Field(
        False,
        description="set aside before any model choice: no fit uses it, and its errors are "
        "reported apart (a test of the model, not an input)",
    )
    notes: str = ""

    @property
    def critic(self) -> bool:
        return self.algorithm == "ppo"

    def fitted(self, phase: str) -> bool:
        """Whether fits of `phase` use this step: not held out, and its generation in the
        model's domain if the phase is generation."""
        return not self.held_out and not (phase == "generation" and self.generation_out_of_domain)

    @property
    def samples(self) -> int:
        return self.prompts_per_step * self.n_samples

    @model_validator(mode="after")
    def _whole_replicas(self) -> MeasuredStep:
        self.trainer().check(self.n_gpus)
        return self

    def trainer(self) -> TrainerSettings:
        return TrainerSettings(
            **{name: getattr(self, column) for name, column in _trainer_columns().items()}
        )

    @staticmethod
    def trainer_values(trainer: TrainerSettings) -> dict[str, object]:
        """The row's columns for a trainer's settings: `trainer()` read backwards."""
        return {column: getattr(trainer, name) for name, column in _trainer_columns().items()}

    def layout(self) -> TrainLayout:
        """The trainer's layout as the run's config logs it."""
        mean = self.prompt_length_mean + self.response_length_mean
        return self.trainer().layout(self.n_gpus, self.prompts_per_step, self.n_samples, mean)

    def tokens(self) -> float:
        """Prompt plus response tokens of the step's samples: what scoring and training process."""
        return self.samples * (self.prompt_length_mean + self.response_length_mean)

    def measured(self, phase: str) -> float | None:
        """The step's time in one phase, None where its source lacks a timer the phase needs.
        Generation is verl's `gen` timer (the rollout with its weight sync); scoring is every
        log-prob, reference and value pass; training every update."""
        if phase == "generation":
            return self.gen_s
        if phase == "scoring":
            parts = [self.old_log_prob_s, self.ref_s] + ([self.values_s] if self.critic else [])
        else:
            parts = [self.update_actor_s] + ([self.update_critic_s] if self.critic else [])
        present = [p for p in parts if p is not None]
        return sum(present) if present else None


def _trainer_columns() -> dict[str, str]:
    """Each trainer setting's column (the same name, but for the actor's layout), so a new
    setting reaches rows and back or fails loudly."""
    renamed = {"strategy": "actor_strategy", "tp": "train_tp", "pp": "train_pp", "vpp": "train_vpp"}
    return {name: renamed.get(name, name) for name in TrainerSettings.model_fields}


def read_measured(path: Path | None = None) -> list[MeasuredStep]:
    """The shipped dataset, or a CSV of the same columns; errors name the file and line."""
    rows = read_csv_rows(MeasuredStep, path, SHIPPED, "runtime/data/verl_steps.csv")
    if not rows:
        raise InputError(f"{path or 'runtime/data/verl_steps.csv'}: no rows")
    return rows


def by_run(rows: Iterable[MeasuredStep]) -> dict[str, list[MeasuredStep]]:
    runs: dict[str, list[MeasuredStep]] = {}
    for row in rows:
        runs.setdefault(row.run, []).append(row)
    return runs
