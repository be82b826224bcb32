"""Measure a `TimeProfile` for a model on this machine, so the simulator can use real numbers.

The simulator prices a step from a few per-token and per-step times. They are measured here with
the same code paths the runtime runs: `KVBatch` prefill and decode steps (continuous batching),
a no-grad forward for scoring, forward + backward for training. Decode time is fitted as
a + b * batch by non-negative least squares over several batch sizes.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import nnls
from transformers import PreTrainedModel

from rlguard.runtime.generation.kv_batch import KVBatch
from rlguard.runtime.policies.profiles import TimeProfile, save_profile


@dataclass(frozen=True)
class ProfileSettings:
    """What is timed. Defaults suit a tiny model on a CPU; use real lengths on a GPU."""

    prompt_tokens: int = 128  # prefill: one prompt of this length
    context_tokens: int = 128  # decode: each sequence's context when the steps are timed
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16)
    decode_steps: int = 8  # timed steps per batch size (after one untimed step)
    sequence_tokens: int = 128  # scoring and training: sequences of this length ...
    sequences: int = 4  # ... this many at once
    repeats: int = 3  # medians over repeats

    def __post_init__(self) -> None:
        if len(set(self.batch_sizes)) < 2:
            raise ValueError(f"batch_sizes={self.batch_sizes}: a line needs two batch sizes")


def fit_step_time(batch_sizes: Sequence[int], seconds: Sequence[float]) -> tuple[float, float]:
    """(a, b) with seconds ~ a + b * batch, both >= 0 (a decode step never gets cheaper with more
    sequences, and never costs less than nothing)."""
    design = np.column_stack([np.ones(len(batch_sizes)), np.asarray(batch_sizes, dtype=float)])
    (a, b), _ = nnls(design, np.asarray(seconds, dtype=float))
    return float(a), float(b)


def seconds(run: Callable[[], object], device: torch.device) -> float:
    """Wall time of `run`, waiting for the accelerator's queue before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def random_tokens(model: PreTrainedModel, *shape: int) -> torch.Tensor:
    return torch.randint(0, model.config.vocab_size, shape, device=model.device)


def prefill_s_per_token(model: PreTrainedModel, settings: ProfileSettings) -> float:
    prompt = random_tokens(model, settings.prompt_tokens).tolist()
    KVBatch.prefill(model, [prompt])  # warm-up: allocator, kernels
    run = partial(KVBatch.prefill, model, [prompt])
    runs = [seconds(run, model.device) for _ in range(settings.repeats)]
    return statistics.median(runs) / settings.prompt_tokens


def decode_step_seconds(
    model: PreTrainedModel, batch_size: int, settings: ProfileSettings
) -> float:
    """Median time of one decode step with `batch_size` sequences of `context_tokens` context."""
    context = random_tokens(model, settings.context_tokens).tolist()
    prompt = KVBatch.prefill(model, [context])
    steps = []
    for _ in range(settings.repeats):
        batch = KVBatch.concat([prompt.repeat(batch_size)])  # own tensors, as in a real batch
        for step in range(settings.decode_steps + 1):
            tokens = random_tokens(model, batch_size)
            elapsed = seconds(partial(batch.step, model, tokens), model.device)
            if step > 0:
                steps.append(elapsed)
    return statistics.median(steps)


def forward_s_per_token(model: PreTrainedModel, settings: ProfileSettings, train: bool) -> float:
    """One forward (scoring) or forward + backward of a causal-LM loss (training) per token; the
    gradients are returned by autograd, not accumulated into the model's `.grad`."""
    ids = random_tokens(model, settings.sequences, settings.sequence_tokens)
    params = [p for p in model.parameters() if p.requires_grad]

    def run() -> None:
        if not train:
            with torch.no_grad():
                model(input_ids=ids)
            return
        loss = model(input_ids=ids, labels=ids).loss
        torch.autograd.grad(loss, params)

    run()  # warm-up
    runs = [seconds(run, model.device) for _ in range(settings.repeats)]
    return statistics.median(runs) / ids.numel()


def measure_profile(
    model: PreTrainedModel,
    name: str,
    cold_start_s: float,
    max_batch: int = 64,
    gpus_per_actor: int = 1,
    settings: ProfileSettings | None = None,
) -> TimeProfile:
    """Time this model here. `cold_start_s` (starting a function: container, runtime, weights)
    cannot be seen from a model already in memory, so the caller measures and passes it."""
    settings = settings or ProfileSettings()
    was_training = model.training
    model.eval()
    try:
        step_times = [decode_step_seconds(model, b, settings) for b in settings.batch_sizes]
        per_step, per_seq = fit_step_time(settings.batch_sizes, step_times)
        return TimeProfile(
            name=name,
            prefill_s_per_token=prefill_s_per_token(model, settings),
            decode_s_per_step=per_step,
            decode_s_per_seq=per_seq,
            score_s_per_token=forward_s_per_token(model, settings, train=False),
            train_s_per_token=forward_s_per_token(model, settings, train=True),
            cold_start_s=cold_start_s,
            max_batch=max_batch,
            gpus_per_actor=gpus_per_actor,
        )
    finally:
        model.train(was_training)


def save_measured_profile(
    profile: TimeProfile,
    path: Path,
    settings: ProfileSettings,
    model: PreTrainedModel,
    derived: dict[str, str] | None = None,
) -> None:
    """Write `profile` in the shipped profiles' YAML format, with how each number was measured;
    `derived` says how the caller got the numbers it set (`cold_start_s` at least, which cannot
    be measured from a model in memory)."""
    measured = ", ".join(f"{key}={value}" for key, value in asdict(settings).items())
    derivation = {
        "measured": f"rlguard.runtime.generation.profiling on {platform.machine()} "
        f"({model.device}, {torch.get_num_threads()} torch threads, {model.dtype}); {measured}",
        "prefill_s_per_token": "median prefill of one prompt / its tokens",
        "decode_s_per_step": "intercept of a non-negative least-squares line through the median "
        "decode-step time per batch size",
        "decode_s_per_seq": "slope of that line",
        "score_s_per_token": "median no-grad forward / tokens",
        "train_s_per_token": "median forward + backward of the LM loss / tokens, no optimizer step",
        "cold_start_s": "given by the caller (not measurable from a model in memory)",
        "decode_s_per_context_token": "0: one context length measured (in the per-sequence slope)",
        "decode_compute_s_per_seq": "0: a measured step already includes its compute",
        "kv_capacity_tokens": "null: only max_batch binds",
        "max_batch": "given by the caller",
        "gpus_per_actor": "given by the caller (the model ran on that many devices)",
        "phase_switch_s": "0: not measured (a model in one process switches no engine)",
        "score_s_per_pass": "0: not measured (in the per-token time)",
        "train_s_per_update": "0: not measured (in the per-token time)",
        "score_micro_s_per_token": "0: not measured (in the per-token time)",
        "train_micro_s_per_token": "0: not measured (in the per-token time)",
        **(derived or {}),
    }
    save_profile(profile, path, derivation)
