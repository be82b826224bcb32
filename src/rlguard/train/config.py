"""Training configs (TRL's shape: one config object per trainer), loaded from YAML.

A config error is one line naming the field path (`tasks.0.kl_max: ...`), never a traceback.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from rlguard.errors import InputError
from rlguard.judges.registry import JudgeSpec
from rlguard.train.devices import check_name

ConfigT = TypeVar("ConfigT", bound=BaseModel)
Optimizer = Literal["crpg", "crraft", "codpo", "grpo", "ppo"]
MixedPrecision = Literal["no", "bf16", "fp16"]
ShardingMode = Literal["none", "fsdp"]


class FrozenConfig(BaseModel):
    """A config section: unknown keys are errors, and a parsed config does not change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LoraSpec(FrozenConfig):
    """peft LoRA on the policy; the reference is then the base model with adapters disabled."""

    r: int = Field(8, ge=1)
    alpha: int = Field(16, ge=1)
    dropout: float = Field(0.0, ge=0, lt=1)
    target_modules: list[str] | str = "all-linear"


class ModelSpec(FrozenConfig):
    """An HF causal LM: a local path (weights and tokenizer), or an HF config plus a tokenizer."""

    path: str | None = None
    config: dict[str, Any] | None = Field(None, description="HF config kwargs incl. model_type")
    tokenizer: str | None = Field(None, description="tokenizer path (default: path)")
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"

    @model_validator(mode="after")
    def _one_source(self) -> ModelSpec:
        if (self.path is None) == (self.config is None):
            raise ValueError("give exactly one of path or config")
        if self.path is None and self.tokenizer is None:
            raise ValueError("a model built from config needs a tokenizer path")
        return self


class RewardSpec(FrozenConfig):
    """A reward model: an HF sequence classifier (path) or a Python callable 'module:function'
    (or 'file.py:function') taking (prompts, completions) and returning floats; a callable with
    a `metadata` parameter also gets each prompt's metadata (as TRL's reward functions get the
    dataset's columns), and `options` as keyword arguments."""

    model: str | None = None
    function: str | None = None
    options: dict[str, Any] = Field(
        default_factory=dict, description="a function's keyword arguments"
    )

    @model_validator(mode="after")
    def _one_source(self) -> RewardSpec:
        if (self.model is None) == (self.function is None):
            raise ValueError("give exactly one of model or function")
        if self.options and self.function is None:
            raise ValueError("options are a function's keyword arguments (give a function)")
        return self


class Devices(FrozenConfig):
    """Per-model overrides of the run's `device` (None: that default)."""

    policy: str | None = None
    reference: str | None = None
    critic: str | None = Field(None, description="PPO's value model")
    reward: str | None = Field(None, description="every task's reward and gold models")

    @field_validator("*")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return value if value is None else check_name(value)


class TaskConfig(FrozenConfig):
    """One task of CGPO's Algorithm 2: its prompts, reward model, judges, optimizer and weight."""

    name: str
    prompts: str = Field(description="JSONL of {prompt, metadata, reference?}, or a local dataset")
    eval_prompts: str | None = Field(None, description="held-out prompts for evaluation")
    split: str = Field("train", description="split, when prompts is an HF datasets directory")
    reward: RewardSpec
    gold: RewardSpec | None = Field(
        None, description="held-out gold metric; the task's eval score when given"
    )
    judges: list[JudgeSpec] = Field(default_factory=list)
    scores: dict[str, RewardSpec] = Field(
        default_factory=dict,
        description="scored and logged at each step and eval (score/<name>), never trained on",
    )
    optimizer: Optimizer = "crpg"
    weight: float = Field(1.0, ge=0, description="rho: this task's share of each policy step")
    k: int = Field(4, ge=1, description="samples per prompt")
    batch_size: int = Field(4, ge=1, description="prompts per step")
    kl_max: float = Field(math.inf, description="KL threshold (sequence log-ratio) of CRPG/CRRAFT")
    beta: float = Field(0.1, ge=0, description="CODPO/DPO temperature; GRPO KL coefficient")
    lam: float = Field(0.0, ge=0, description="CODPO weight of the chosen log-likelihood")
    clip_eps: float = Field(0.2, gt=0, description="PPO/GRPO ratio clipping")
    kl_coef: float = Field(0.05, ge=0, description="PPO per-token KL penalty")
    gamma: float = Field(1.0, gt=0, le=1, description="PPO discount")
    gae_lambda: float = Field(0.95, ge=0, le=1, description="PPO GAE lambda")
    vf_coef: float = Field(0.5, ge=0, description="PPO value-loss weight")
    baseline: Literal["dataset", "reference"] = Field(
        "dataset", description="a_bar: the row's 'reference' answer, or a reference-model sample"
    )
    max_new_tokens: int = Field(64, ge=1)
    temperature: float = Field(1.0, gt=0)

    @field_validator("judges", mode="before")
    @classmethod
    def _names_to_specs(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("kl_max")
    @classmethod
    def _positive(cls, value: float) -> float:
        if not value > 0:
            raise ValueError("KL_max must be > 0")  # the message adds "(got value)"
        return value


class CGPOConfig(FrozenConfig):
    """A CGPO run: policy, reference, tasks and the loop's schedule."""

    output_dir: str
    policy: ModelSpec
    reference: ModelSpec | None = Field(None, description="default: a frozen copy of the policy")
    lora: LoraSpec | None = None
    tasks: list[TaskConfig]
    steps: int = Field(100, ge=1)
    learning_rate: float = Field(1e-5, gt=0)
    max_grad_norm: float = Field(1.0, gt=0)
    updates_per_batch: int = Field(
        1, ge=1, description="optimizer updates per sampled batch (TRL's num_iterations)"
    )
    device: str = Field("auto", description="every model's device: auto, cpu, cuda, cuda:N, mps")
    devices: Devices = Field(default_factory=Devices)
    mixed_precision: MixedPrecision = Field(
        "no", description="autocast forwards in bf16/fp16 over fp32 weights and optimizer state"
    )
    sharding: ShardingMode = Field(
        "none",
        description="fsdp: the policy's and critic's weights, gradients and AdamW state "
        "split over the data-parallel processes (FSDP2)",
    )
    micro_batch_size: int | None = Field(
        None, ge=1, description="samples per forward/backward (None: a task's whole batch)"
    )
    gradient_checkpointing: bool = Field(
        False, description="recompute activations in backward (policy and critic)"
    )
    eval_every: int = Field(10, ge=1)
    eval_prompts: int = Field(32, ge=1, description="eval prompts per task")
    eval_temperature: float = Field(
        0.0, ge=0, description="0 = greedy; > 0 samples (with a fixed seed per evaluation)"
    )
    eval_samples: int = Field(
        1, ge=1, description="answers per eval prompt when sampling (more: less eval noise)"
    )
    save_every: int = Field(10, ge=1)
    keep_checkpoints: int = Field(2, ge=1, description="latest checkpoints kept (plus the best)")
    seed: int = 0
    tensorboard: bool = True
    run_name: str | None = None

    @field_validator("tasks")
    @classmethod
    def _tasks(cls, tasks: list[TaskConfig]) -> list[TaskConfig]:
        # a field validator, so the error names `tasks` rather than the whole config
        if not tasks:
            raise ValueError("at least one task is needed")
        names = [t.name for t in tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"task names repeat: {names}")
        if sum(t.weight for t in tasks) <= 0:
            raise ValueError("all task weights are zero (some tasks.N.weight must be > 0)")
        return tasks

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        return check_name(value)

    @field_validator("devices")
    @classmethod
    def _devices(cls, devices: Devices, info: ValidationInfo) -> Devices:
        if devices.reference and info.data.get("lora") and info.data.get("reference") is None:
            raise ValueError(
                "reference: under lora the reference is the policy's base model, on the policy's"
                " device; drop devices.reference"
            )
        return devices

    @field_validator("mixed_precision", mode="before")
    @classmethod
    def _yaml_no(cls, value: Any) -> Any:
        return "no" if value is False else value  # YAML 1.1 reads a bare `no` as false

    @field_validator("mixed_precision")
    @classmethod
    def _master_weights(cls, value: str, info: ValidationInfo) -> str:
        policy = info.data.get("policy")
        if value != "no" and policy is not None and policy.dtype != "float32":
            raise ValueError(
                f"{value} keeps fp32 master weights: the policy's dtype must be float32 "
                f"(policy.dtype is {policy.dtype})"
            )
        return value

    @field_validator("sharding")
    @classmethod
    def _shardable(cls, value: str, info: ValidationInfo) -> str:
        if value == "fsdp" and info.data.get("lora") is not None:
            # the LoRA reference is the policy itself with adapters off: it would be sharded too
            raise ValueError("fsdp shards whole models; under lora use sharding: none")
        return value

    @field_validator("eval_samples")
    @classmethod
    def _eval_samples(cls, samples: int, info: ValidationInfo) -> int:
        if samples > 1 and info.data.get("eval_temperature") == 0:
            raise ValueError(f"{samples} answers per prompt need eval_temperature > 0")
        return samples

    def local_paths(self) -> list[tuple[str, str]]:
        """(field, path) of every local file or directory the run reads."""
        paths = [*model_paths(self.policy, "policy"), *model_paths(self.reference, "reference")]
        for i, task in enumerate(self.tasks):
            paths.append((f"tasks.{i}.prompts", task.prompts))
            if task.eval_prompts is not None:
                paths.append((f"tasks.{i}.eval_prompts", task.eval_prompts))
            for j, judge in enumerate(task.judges):
                if judge.model is not None:
                    paths.append((f"tasks.{i}.judges.{j}.model", judge.model))
                if judge.grader is not None:
                    paths.append((f"tasks.{i}.judges.{j}.grader", judge.grader))
            specs = [("reward", task.reward), ("gold", task.gold)]
            specs += [(f"scores.{name}", spec) for name, spec in task.scores.items()]
            for name, spec in specs:
                if spec is not None and spec.model is not None:
                    paths.append((f"tasks.{i}.{name}.model", spec.model))
        return paths


def model_paths(spec: ModelSpec | None, where: str) -> list[tuple[str, str]]:
    if spec is None:
        return []
    named = {"path": spec.path, "tokenizer": spec.tokenizer}
    return [(f"{where}.{k}", v) for k, v in named.items() if v is not None]


def check_paths(paths: list[tuple[str, str]], source: Path | str) -> None:
    """Missing inputs fail up front, in one line naming the config file and the field."""
    for where, value in paths:
        if not Path(value).exists():
            raise InputError(f"{source}: {where}: no such file or directory {value}")


def validation_message(error: ValidationError) -> str:
    """The first error as `field.path: message (got value)`."""
    err = error.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "config"
    message = err["msg"].removeprefix("Value error, ")
    shown = err["type"] != "missing" and not isinstance(err["input"], dict | list)
    got = f" (got {err['input']!r:.80})" if shown else ""
    return f"{where}: {message}{got}"


def load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not valid YAML ({e})".replace("\n", " ")) from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    return raw


def parse_config(model: type[ConfigT], raw: dict[str, Any], source: Path | str) -> ConfigT:
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        raise InputError(f"{source}: {validation_message(e)}") from None
