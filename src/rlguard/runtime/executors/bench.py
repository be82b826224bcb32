"""Real steps on this machine: the serverful baseline against the serverless executor and its
ablations, from measured times, in the simulator's schema (`report.comparison`).

The workload is the toy world's math prompts behind a shared instruction (as a chat template puts
a system prompt before every question) on a tiny Llama trained by nobody, GRPO with the toy proxy
reward and the math judge. An untrained model almost never ends a response on its own,
so response lengths are set per prompt: each prompt gets a token budget drawn once from a
long-tailed (log-normal) distribution and keeps it every step, which gives the within-prompt
correlation the length predictor relies on (REFERENCE.md s5). Every executor runs one warm-up
step (its cold starts: the serverful pool's start, the serverless functions' first start) and
then `steps` measured steps on the same prompts and seeds; the numbers are means over the
measured steps. On a CPU each function process stands for one GPU in the billing.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
from pydantic import BaseModel, ConfigDict, Field
from transformers import AutoModelForCausalLM

from rlguard.runtime.executors import (
    Executor,
    RuntimeConfig,
    ServerfulExecutor,
    ServerlessExecutor,
    StepBatch,
    StepJob,
)
from rlguard.runtime.generation.profiling import ProfileSettings, measure_profile
from rlguard.runtime.policies.components import ABLATIONS, Components
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.policies.report import StepReport, comparison, summarize
from rlguard.train.config import TaskConfig
from rlguard.train.prompts import load_prompts
from rlguard.train.toy import build

Progress = Callable[[str], None]
SYSTEM_PROMPT = (
    "You are a careful assistant. Read the question, work it out step by step, check the "
    "arithmetic, and finish with one line of the form: The final answer is N. "
)


class BenchSettings(BaseModel):
    """The bench's workload and runtime; field names are `rlguard runtime bench`'s options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompts: int = Field(12, ge=1, description="prompts per step")
    k: int = Field(4, ge=1, description="samples per prompt")
    steps: int = Field(2, ge=1, description="measured steps, after one warm-up step")
    actors: int = Field(2, ge=1, description="serverful pool; most serverless functions at once")
    max_batch: int = Field(16, ge=1)
    tau: float = Field(0.9, gt=0, le=1, description="cut-and-migrate threshold")
    lam: float = Field(0.5, ge=0, le=1, description="latency weight of actor scaling")
    median_tokens: float = Field(16.0, gt=0, description="of the log-normal response lengths")
    max_tokens: int = Field(64, ge=2)
    hidden_size: int = Field(256, ge=1)
    layers: int = Field(2, ge=1)
    seed: int = 0


def response_budgets(settings: BenchSettings) -> list[int]:
    """One token budget per prompt: log-normal (sigma 0.8) around the median, in [2, max]."""
    rng = np.random.default_rng(settings.seed)
    draws = settings.median_tokens * np.exp(0.8 * rng.standard_normal(settings.prompts))
    return np.clip(np.round(draws), 2, settings.max_tokens).astype(int).tolist()


@dataclass
class Measured:
    """One executor's warm-up and measured steps."""

    warmup: StepReport
    reports: list[StepReport]
    prefill_s: list[float]  # per measured step, summed over actors
    idle_slot_steps: list[int]
    samples: list  # the first measured step's samples, to compare across executors
    cold_starts_s: list[float]

    def summary(self) -> dict[str, Any]:
        return {
            **summarize(self.reports),
            "prefill_s": float(np.mean(self.prefill_s)),
            "idle_slot_steps": float(np.mean(self.idle_slot_steps)),
            "warmup_step_s": self.warmup.step_s,
            "cold_start_s": float(np.mean(self.cold_starts_s)) if self.cold_starts_s else None,
        }


def measure(executor: Executor, batches: list[StepBatch]) -> Measured:
    """The first batch warms up; the rest are measured. Closes the executor."""
    try:
        warmup = executor.run_step(batches[0]).report
        reports, prefill_s, idle, samples = [], [], [], None
        for batch in batches[1:]:
            result = executor.run_step(batch)
            phase = executor.last_phase
            reports.append(result.report)
            prefill_s.append(phase.prefill_s)
            idle.append(phase.idle_slot_steps)
            samples = samples if samples is not None else result.samples
        return Measured(warmup, reports, prefill_s, idle, samples, list(executor.cold_starts_s))
    finally:
        executor.close()


def tiny_profile(policy: Path, cold_start_s: float, max_batch: int) -> TimeProfile:
    """The tiny Llama's TimeProfile measured here, for cost-aware scaling."""
    model = AutoModelForCausalLM.from_pretrained(policy)
    settings = ProfileSettings(
        prompt_tokens=16,
        context_tokens=32,
        batch_sizes=(1, 4, max_batch),
        decode_steps=4,
        sequence_tokens=32,
        sequences=4,
        repeats=2,
    )
    return measure_profile(model, "toy-llama-cpu", cold_start_s, max_batch, settings=settings)


def run_bench(
    settings: BenchSettings, root: Path, prices: Prices, progress: Progress = lambda _: None
) -> dict[str, Any]:
    """Both executors and the four ablations on the toy workload; needs Ray initialised."""
    paths = build(root, settings.seed, settings.hidden_size, settings.layers)
    prompts = load_prompts(str(root / "math_prompts.jsonl"), "train", "bench.prompts")
    texts = [SYSTEM_PROMPT + text for text in prompts.texts[: settings.prompts]]
    metadata = prompts.metadata[: settings.prompts]
    budgets = response_budgets(settings)
    task = TaskConfig(
        name="math",
        prompts=str(root / "math_prompts.jsonl"),
        reward={"function": "rlguard.train.toy:proxy_reward"},
        judges=["math"],
        optimizer="grpo",
        k=settings.k,
        max_new_tokens=settings.max_tokens,
    )
    config = RuntimeConfig(
        str(paths["base"]),
        max_batch=settings.max_batch,
        actors=settings.actors,
        step=StepJob(task, learning_rate=1e-3),
    )
    batches = [StepBatch(texts, metadata, seed, budgets) for seed in range(settings.steps + 1)]

    progress("serverful baseline")
    serverful = ServerfulExecutor(config, prices)
    pool_start_s = serverful.startup.step_s  # the pool starts with the job, before any step
    baseline = measure(serverful, batches)
    cold = float(np.mean(baseline.cold_starts_s))
    progress("measuring the time profile")
    profile = tiny_profile(paths["base"], cold, settings.max_batch)
    runs: dict[str, Measured] = {}
    for name, components in {"serverless": Components(), **ABLATIONS}.items():
        progress(name)
        executor = ServerlessExecutor(
            config, prices, profile, components, settings.tau, settings.lam
        )
        runs[name] = measure(executor, batches)
    summaries = {name: run.summary() for name, run in runs.items()}
    for name, run in runs.items():
        summaries[name]["same_samples_as_baseline"] = run.samples == baseline.samples
    config_out = {
        **settings.model_dump(),
        "budgets": budgets,
        "prices": asdict(prices),
        "profile": asdict(profile),
        "machine": f"{platform.machine()}, {ray.cluster_resources().get('CPU', 0):g} Ray CPUs",
        "torch": torch.__version__,
    }
    serverless = summaries.pop("serverless")
    baseline_out = {**baseline.summary(), "pool_start_s": pool_start_s}
    return comparison(config_out, baseline_out, serverless, summaries)


@contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[None]:
    """A local Ray for the bench (or the one already running)."""
    started = not ray.is_initialized()
    if started:
        ray.init(
            address="local",  # a new cluster, never one found on the host (a platform's)
            num_cpus=num_cpus,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    try:
        yield
    finally:
        if started:
            ray.shutdown()
