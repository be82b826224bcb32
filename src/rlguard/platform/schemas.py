"""What the API accepts: request bodies, strict (unknown fields are errors, as a typo should be).

Responses are plain dicts built in `views.py`, in the shapes docs/platform.md lists.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from rlguard.platform.db import json_bytes
from rlguard.platform.jobenv import MAX_REQUIREMENTS, requirement_lines
from rlguard.platform.watchers import WatchSpec
from rlguard.platform.watchers.checkpoints import RULES as DELIVERY_RULES
from rlguard.runtime.calib.quote import QuoteSetup

Finite = Annotated[float, Field(allow_inf_nan=False)]
Step = Annotated[int, Field(ge=0, le=2**31 - 1)]  # a 32-bit INTEGER column on PostgreSQL
Text = Annotated[str, Field(pattern=r"^[^\x00]*$")]  # PostgreSQL text cannot hold a NUL
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

MAX_GPUS_PER_JOB = 1024
MAX_COMMAND_CHARS = 10_000
MAX_RECORD_BYTES = 4096


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _small(value: dict[str, Any]) -> dict[str, Any]:
    """A free-form dict a report stores as one row's JSON, at most MAX_RECORD_BYTES so: one
    record stays small however large a body the API takes (job_writes.py bounds the sum)."""
    size = json_bytes(value)
    if size > MAX_RECORD_BYTES:
        raise ValueError(f"{size} bytes as JSON, over the limit of {MAX_RECORD_BYTES} bytes")
    return value


class StopPolicy(Strict):
    """A job's override of the platform's stop rule; unset fields keep the platform's."""

    rule: str | None = Field(None, min_length=1, description="a stop rule's name, or none")
    k: int | None = Field(None, ge=1, strict=True)
    min_delta: Finite | None = Field(None, ge=0)
    warmup: int | None = Field(None, ge=0, strict=True)
    patience: int | None = Field(
        None, ge=1, strict=True, description="patience rules: evals without a new best"
    )
    shadow: bool = Field(False, description="advise and record, never stop")


class JobCreate(Strict):
    """A job: an `rlguard train` stage config, or a command (Ray Jobs' entrypoint)."""

    config: dict[str, Any] | None = Field(None, description="an rlguard train stage config")
    command: str | None = Field(None, min_length=1, max_length=MAX_COMMAND_CHARS)
    kind: str | None = Field(
        None,
        pattern=r"^[a-z][a-z0-9_-]{0,19}$",
        description="command jobs: what stop rules see (default rlhf); train jobs: from stage",
    )
    gpus: int = Field(1, ge=1, le=MAX_GPUS_PER_JOB)
    cpus: Finite = Field(1.0, ge=0, le=256)
    memory_mb: int | None = Field(
        None, ge=64, le=16 * 1024 * 1024, strict=True, description="memory limit (sandboxed)"
    )
    estimate_s: Finite | None = Field(None, gt=0, description="the user's runtime estimate")
    env: dict[str, str] = Field(default_factory=dict, description="command jobs: extra variables")
    stop_policy: StopPolicy = Field(default_factory=StopPolicy)
    watch: WatchSpec | None = Field(
        None,
        description="command jobs: where the job's framework logs evals and saves checkpoints "
        "(a preset name, or a spec: docs/watchers.md); a watcher beside the job reports them",
    )
    working_dir: str | None = Field(
        None,
        pattern=r"^sha256:[0-9a-f]{64}$",
        description="command jobs: a working directory uploaded with POST /v1/working_dirs; "
        "each attempt starts in the job's directory holding its files",
    )
    requirements: list[Annotated[str, Field(max_length=1000)]] | None = Field(
        None,
        max_length=MAX_REQUIREMENTS * 4,
        description="command jobs: PEP 508 requirements, resolved at submission and installed "
        "in the job's own Python environment (its bin first on PATH)",
    )
    setup: QuoteSetup | None = Field(
        None,
        description="what the job runs, as `rlguard runtime simulate --setup` reads it, plus "
        "`steps`: the job is quoted from it at submission (default gpus: its n_gpus)",
    )
    budget_gpu_hours: Finite | None = Field(
        None, gt=0, description="stop the job when its pace projects more GPU-hours than this"
    )

    @field_validator("watch", mode="before")
    @classmethod
    def _preset_name(cls, watch: Any) -> Any:
        """A bare preset name is the preset with its default source."""
        return {"preset": watch} if isinstance(watch, str) else watch

    @field_validator("command")
    @classmethod
    def _startable(cls, command: str | None) -> str | None:
        if command is not None and "\x00" in command:
            raise ValueError("a command cannot contain a NUL character")
        return command

    @field_validator("env")
    @classmethod
    def _environment(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not ENV_NAME.match(name) or name.startswith("RLGUARD_"):
                raise ValueError(f"{name!r} is not a variable name a job may set")
            if "\x00" in value:
                raise ValueError(f"the value of {name} contains a NUL character")
        return env

    @field_validator("requirements")
    @classmethod
    def _requirements(cls, lines: list[str] | None) -> list[str] | None:
        return None if lines is None else requirement_lines(lines)

    @model_validator(mode="after")
    def _gpus_of_setup(self) -> JobCreate:
        if self.setup is not None and "gpus" not in self.model_fields_set:
            self.gpus = self.setup.n_gpus  # past a quota or the cluster: refused at submission
        return self

    @model_validator(mode="after")
    def _one_body(self) -> JobCreate:
        if (self.config is None) == (self.command is None):
            raise ValueError("give exactly one of config or command")
        if self.config is not None and (self.kind is not None or self.env):
            raise ValueError("kind and env are for command jobs (a train job's kind is its stage)")
        if self.config is not None and (self.working_dir or self.requirements is not None):
            raise ValueError(
                "working_dir and requirements are for command jobs (a train job runs the "
                "platform's own `rlguard train`)"
            )
        if self.config is not None and self.watch is not None:
            raise ValueError("watch is for command jobs (a train job reports its own evals)")
        return self


class EvalReport(Strict):
    """One eval of a running job, reported with its job token; `step` makes it idempotent."""

    step: Step
    score: Finite
    progress: Finite = Field(ge=0, le=1)
    loss: Finite | None = None
    proxy: Finite | None = None
    kl: Finite | None = None
    checkpoint: Text | None = Field(
        None, max_length=1000, description="where the weights of this eval are saved, if kept"
    )
    metrics: Annotated[dict[str, Finite], AfterValidator(_small)] = Field(
        default_factory=dict,
        description="what else the job measured (its train reward since its last eval, ...)",
    )


class CheckpointReport(Strict):
    step: Step
    path: Text = Field(min_length=1, max_length=1000)
    metrics: Annotated[dict[str, Finite], AfterValidator(_small)] = Field(default_factory=dict)


class WatchWarningReport(Strict):
    """Something a job's watcher wants its owner to hear (a tag never seen, a NaN, ...)."""

    code: str = Field(pattern=r"^[a-z_]{1,40}$")
    message: Text = Field(max_length=2000)
    data: Annotated[dict[str, Any], AfterValidator(_small)] = Field(default_factory=dict)


class StepReport(Strict):
    """One training step's timers and lengths, as verl logs them (`timing_s/gen` is `gen_s`):
    the columns of runtime/data/verl_steps.csv, so finished jobs can be exported to recalibrate."""

    step: Step
    gen_s: Finite | None = Field(None, gt=0)
    generate_sequences_s: Finite | None = Field(None, gt=0)
    reshard_s: Finite | None = Field(None, ge=0)
    old_log_prob_s: Finite | None = Field(None, ge=0)
    ref_s: Finite | None = Field(None, ge=0)
    values_s: Finite | None = Field(None, ge=0)
    adv_s: Finite | None = Field(None, ge=0)
    update_critic_s: Finite | None = Field(None, ge=0)
    update_actor_s: Finite | None = Field(None, gt=0)
    testing_s: Finite | None = Field(None, ge=0)
    step_s: Finite | None = Field(None, gt=0)
    prompt_length_mean: Finite | None = Field(None, gt=0)
    response_length_mean: Finite | None = Field(None, gt=0)
    response_length_max: Finite | None = Field(None, gt=0)
    response_clip_ratio: Finite | None = Field(None, ge=0, le=1)
    mfu_actor: Finite | None = Field(None, gt=0, description="verl's perf/mfu/actor")


class DeliveryReport(Strict):
    """The checkpoint a watcher delivers for the job's best eval, and the rule that chose it."""

    best_step: Step | None
    best_score: Finite | None
    step: Step | None
    path: Text | None = Field(max_length=1000)
    rule: Literal[DELIVERY_RULES]  # type: ignore[valid-type]
    reason: Text = Field(max_length=2000)
