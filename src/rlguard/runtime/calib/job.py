"""A user's own RLHF job as a simulator setup (`rlguard runtime simulate --setup FILE.yaml`):
model, GPUs, batch, length statistics, engine settings and algorithm, turned into a `Setup` and
the calibrated `TimeProfile` for that model, GPU and engine (or a profile of the user's own, e.g.
one `rlguard runtime calibrate` fitted to their verl logs).

Example:

    model: qwen2.5-7b
    gpu: h100
    n_gpus: 8
    rollout_tp: 2
    prompts_per_step: 1024
    samples_per_prompt: 5
    prompt_length_mean: 105
    max_prompt_length: 512
    response_length_mean: 230
    response_clip_ratio: 0.002
    max_response_length: 1024
    engine: {enforce_eager: true, max_num_seqs: 1024, gpu_memory_utilization: 0.6, vllm_engine: v1}
    trainer: {strategy: fsdp, micro_batch_per_gpu: 40, mini_batch_prompts: 256}
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlguard.errors import InputError
from rlguard.runtime.calib.coefficients import (
    Coefficients,
    EngineArgs,
    calibrated_profile,
    load_coefficients,
)
from rlguard.runtime.calib.comm import TrainerSettings, TrainLayout
from rlguard.runtime.calib.lengths import workload_from_stats
from rlguard.runtime.policies.datafile import build, read_mapping
from rlguard.runtime.policies.profiles import TimeProfile, load_profile
from rlguard.runtime.sim.hardware import gpu_spec, model_spec
from rlguard.runtime.sim.roofline import Assumptions, tensor_parallel
from rlguard.runtime.sim.setups import Setup


class EngineSettings(BaseModel):
    """The rollout engine's settings; defaults are verl's before August 2025 on vLLM's V1
    engine (the only one since vLLM 0.11). The step model prices the two engine generations
    apart; a quote names an engine that no fitted run measured on the job's GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enforce_eager: bool = EngineArgs.enforce_eager
    max_num_seqs: int = Field(EngineArgs.max_num_seqs, gt=0)
    gpu_memory_utilization: float = Field(EngineArgs.gpu_memory_utilization, gt=0, le=1)
    vllm_engine: Literal["v0", "v1"] = EngineArgs.vllm_engine


class JobFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    model: str = Field(description="a model of runtime/sim/hardware.py (e.g. qwen2.5-7b)")
    gpu: str = Field(description="a GPU of runtime/sim/hardware.py (e.g. h100, l40s)")
    n_gpus: int = Field(gt=0)
    rollout_tp: int | None = Field(None, gt=0, description="default: the roofline's rule")
    algorithm: Literal["grpo", "ppo"] = "grpo"
    reference_model: bool = True
    remove_padding: bool = Field(True, description="the actor's use_remove_padding")
    critic_remove_padding: bool = Field(
        True, description="critic.model.use_remove_padding (verl's default is false)"
    )
    lora_rank: int = Field(0, ge=0)
    prompts_per_step: int = Field(gt=0)
    samples_per_prompt: int = Field(gt=0)
    dataset_prompts: int = Field(7473, gt=0, description="prompts per epoch (GSM8K's train)")
    prompt_length_mean: float = Field(gt=0)
    max_prompt_length: int = Field(1024, gt=0)
    response_length_mean: float = Field(gt=0)
    response_clip_ratio: float = Field(0.0, ge=0, lt=1)
    response_length_max: float | None = Field(None, gt=0)
    max_response_length: int = Field(gt=0)
    engine: EngineSettings = EngineSettings()
    trainer: TrainerSettings = TrainerSettings()
    profile: str | None = Field(None, description="a profile file replacing the calibrated one")
    tau: float = Field(0.9, gt=0, le=1)
    lam: float = Field(0.5, ge=0, le=1)
    steps: int | None = Field(
        None,
        gt=0,
        description="training steps: the platform quotes steps x step (a simulation"
        " runs single steps and ignores it)",
    )

    @model_validator(mode="after")
    def _whole_replicas(self) -> JobFile:
        self.trainer.check(self.n_gpus)
        return self

    def engine_settings(self) -> EngineArgs:
        e = self.engine
        return EngineArgs(e.enforce_eager, e.max_num_seqs, e.gpu_memory_utilization, e.vllm_engine)

    def layout(self) -> TrainLayout:
        mean = self.prompt_length_mean + self.response_length_mean
        return self.trainer.layout(
            self.n_gpus, self.prompts_per_step, self.samples_per_prompt, mean
        )


def read_job(path: Path) -> JobFile:
    return build(JobFile, read_mapping(path), str(path))


def job_setup(job: JobFile, where: str) -> Setup:
    """The simulator's setup; `where` (the file) names errors and, by its stem, the setup."""
    try:
        workload = workload_from_stats(
            job.response_length_mean,
            job.max_response_length,
            job.response_clip_ratio,
            job.response_length_max,
            job.prompts_per_step * job.samples_per_prompt,
            job.prompt_length_mean,
            job.max_prompt_length,
            job.dataset_prompts,
        )
    except InputError as e:
        raise InputError(f"{where}: field 'response_length_mean': {e}") from None
    return Setup(
        name=job.name or Path(where).stem,
        n_gpus=job.n_gpus,
        profile=job.profile or f"calibrated {job.model} on {job.gpu}",
        algorithm=job.algorithm,
        reference_model=job.reference_model,
        remove_padding=job.remove_padding,
        critic_remove_padding=job.critic_remove_padding,
        prompts_per_step=job.prompts_per_step,
        k=job.samples_per_prompt,
        workload=workload,
        tau=job.tau,
        lam=job.lam,
    )


def job_profile(job: JobFile, where: str, coefficients: Coefficients | None = None) -> TimeProfile:
    """The job's own profile file if it names one, else the calibrated profile."""
    if job.profile:
        path = Path(job.profile)
        if not path.is_absolute():
            path = Path(where).parent / path
        return load_profile(path if path.is_file() else job.profile)
    return calibrated_job_profile(job, where, coefficients)


def calibrated_job_profile(
    job: JobFile, where: str, coefficients: Coefficients | None = None
) -> TimeProfile:
    """The calibrated profile of the job's model, GPU and engine, whatever profile it names."""
    return calibrated_for(
        job.model,
        job.gpu,
        job.engine_settings(),
        job.layout(),
        where,
        tp=job.rollout_tp,
        lora=job.lora_rank > 0,
        coefficients=coefficients,
    )


def calibrated_for(
    model_key: str,
    gpu_key: str,
    engine: EngineArgs,
    layout: TrainLayout,
    where: str,
    tp: int | None = None,
    lora: bool = False,
    coefficients: Coefficients | None = None,
) -> TimeProfile:
    """The calibrated profile of a catalog model on a catalog GPU under a rollout engine and a
    trainer layout, the rollout at tensor parallel `tp` or the roofline's rule (the smallest that
    fits); `where` names errors."""
    model = model_spec(model_key, f"{where}: field 'model'")
    gpu = gpu_spec(gpu_key, f"{where}: field 'gpu'")
    assumed = Assumptions(gpu_memory_utilization=engine.gpu_memory_utilization)
    tp = tp or tensor_parallel(model, gpu, assumed)
    return calibrated_profile(
        f"calibrated-{model_key}-{gpu_key}-tp{tp}",
        coefficients or load_coefficients(),
        model,
        gpu,
        tp,
        engine,
        layout,
        lora=lora,
    )
