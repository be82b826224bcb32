"""Where the calibration measured: the GPUs, model sizes and engine modes of the runs its fit
used. A quote outside that domain is still the simulator's number, but its band was never
tested there (a job on an L40S, a 72B model, a rollout with CUDA graphs, vLLM's V0 engine on a
GPU whose fitted generation ran V1 alone), so the quote says what lies outside instead of
presenting the band as if it held.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from rlguard.runtime.calib.job import EngineSettings
from rlguard.runtime.calib.measured import PHASES, read_measured
from rlguard.runtime.sim.hardware import model_spec


@dataclass(frozen=True)
class Domain:
    gpus: tuple[str, ...]
    min_params: float
    max_params: float
    eager_only: bool  # every fitted run decoded with vLLM's enforce_eager
    generation_engines: tuple[tuple[str, str], ...]  # (gpu, vllm_engine) of generation's runs


@cache
def shipped_domain() -> Domain:
    """The domain of the shipped calibration: its fitted (not held-out) runs."""
    rows = [row for row in read_measured() if not row.held_out]
    params = [model_spec(row.model, "model").params for row in rows]
    return Domain(
        gpus=tuple(sorted({row.gpu for row in rows})),
        min_params=min(params),
        max_params=max(params),
        eager_only=all(row.enforce_eager is not False for row in rows),
        generation_engines=tuple(
            sorted({(row.gpu, row.vllm_engine) for row in rows if row.fitted("generation")})
        ),
    )


def findings(
    domain: Domain, model: str, gpu: str, engine: EngineSettings
) -> list[tuple[str, tuple[str, ...]]]:
    """What of a job's setup lies outside `domain`: one sentence each naming the field, with the
    phases whose band it leaves unmeasured (a GPU or a model size: every phase; the engine's
    settings: generation alone, the trainer's passes do not run on vLLM)."""
    out = []
    if gpu.lower() not in domain.gpus:
        note = f"gpu {gpu!r}: no calibration run measured it (measured: {', '.join(domain.gpus)})"
        out.append((note, PHASES))
    params = model_spec(model, "model").params
    if not domain.min_params <= params <= domain.max_params:
        note = (
            f"model {model!r}: {params / 1e9:.1f}B parameters, outside the calibration's "
            f"{domain.min_params / 1e9:.1f}B to {domain.max_params / 1e9:.1f}B"
        )
        out.append((note, PHASES))
    if domain.eager_only and not engine.enforce_eager:
        note = (
            "engine.enforce_eager false: every calibration run decoded in eager mode; with CUDA "
            "graphs generation is priced without launch overhead, a lower bound"
        )
        out.append((note, ("generation",)))
    measured = {g for g, e in domain.generation_engines if e == engine.vllm_engine}
    if gpu.lower() in domain.gpus and gpu.lower() not in measured:
        fitted = ", ".join(f"{g} {e}" for g, e in domain.generation_engines)
        note = (
            f"engine.vllm_engine {engine.vllm_engine!r}: no run whose generation the fit uses "
            f"ran it on {gpu} (fitted: {fitted}); generation's band was not measured there"
        )
        out.append((note, ("generation",)))
    return out


def outside(domain: Domain, model: str, gpu: str, engine: EngineSettings) -> list[str]:
    """The sentences of `findings` (none: the band was measured on jobs like it)."""
    return [note for note, _ in findings(domain, model, gpu, engine)]
