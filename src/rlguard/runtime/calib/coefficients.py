"""The calibrated step model: a handful of coefficients, fitted to measured verl steps
(calib/fit.py), that turn a model, a GPU and the engine's settings into a `TimeProfile`.

Each coefficient multiplies a roofline time or counts seconds of overhead, so one fit serves every
model and GPU in runtime/sim/hardware.py. The terms are the ones the measurements call for
(docs/runtime.md "Calibration"; terms that fitted to zero were dropped, but for the eager
launches of vLLM's V1 engine, kept beside V0's so that the fit says they are hidden):

- a decode step takes `memory` x (weights + the batch's KV cache read at full bandwidth), plus
  `generation_compute` x the matmuls of its sequences at peak (prefill's tokens too: the same
  2 x params FLOPs a token), plus the host's work for each sequence in the batch (scheduling,
  sampling, detokenizing: `host_v0_s_per_seq` or `host_v1_s_per_seq`, by vLLM's engine
  generation), plus, in eager mode (verl's vLLM default until August 2025), the launch overhead
  per layer that the GPU's work does not hide (`eager_v0_s_per_layer`, `eager_v1_s_per_layer`).
  No measured run used CUDA graphs; with them the model assumes the launch overhead gone, a lower
  bound;
- with a LoRA adapter (vLLM's LoRA kernels on every linear layer) `lora_s_per_seq_layer` per
  sequence and layer of every decode step;
- the phase switch per step (weights into the engine, its wake and sleep): `switch_s`, plus
  `switch_lora_s_per_layer` per layer with a LoRA adapter (verl's `layered_summon` gathers and
  merges it a layer at a time) and `switch_offload_s` with parameters offloaded (verl brings them
  back from the CPU to sync them);
- scoring: `forward` x its FLOPs at peak (1 / MFU), plus `micro_s_per_layer` per micro-batch
  and layer on each data-parallel rank (the launches, synchronisations and small kernels a
  micro-batch pays whatever its size: with them a trainer's efficiency falls with shorter
  sequences and smaller micro-batches, and more on a GPU whose compute is fast, instead of one
  constant MFU);
- training: `train` x its FLOPs at peak (with gradient checkpointing the forward twice), plus
  `train_micro_s_per_layer` per micro-batch and layer (forward and backward);
- in both, seconds per PFLOP whatever the GPU (`forward_s_per_pflop`, `train_s_per_pflop`): the
  share of a pass that does not speed up with a GPU's peak, so its MFU falls on faster GPUs
  (Qwen2-7B's full fine-tune, the same workload on both, reaches 0.78 of peak on H20s and about
  half of that on H100s);
- with parameters offloaded to the CPU (verl's `param_offload`), fixed costs that a run without
  offload does not pay: per scoring pass `offload_pass_s_per_layer` per layer and
  `offload_pass_s_per_gb` per GB of weights, per update `offload_update_s_per_layer` per layer
  (verl moves every layer's FSDP unit to the GPU before a pass and back after it; the 0.5B
  runs without offload measure no trace of these costs);
- in both, the trainer layout's exposed communication at the catalog's interconnect bandwidth
  (runtime/calib/comm.py: no coefficient; FSDP hides its gathers behind the compute priced
  above), and a pipeline's bubble stretches the compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from rlguard.io import write_text
from rlguard.runtime.calib.comm import TrainLayout, comm_s_per_token
from rlguard.runtime.policies.datafile import build, read_mapping
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.hardware import GB, GpuSpec, ModelSpec

ACTIVATION_RESERVE = 2 * GB  # as the roofline: vLLM's profiled activation peak (assumption)
PFLOP = 1e15
COLD_START_S, LOAD_BYTES_PER_S = 25.0, 1.55 * GB  # as the roofline (REFERENCE s5, ServerlessLLM)


@dataclass(frozen=True)
class EngineArgs:
    """The rollout engine's settings that change its speed (vLLM's `EngineArgs` of those names,
    and its engine generation); defaults are verl's before August 2025 (vLLM with
    `enforce_eager=True`, `max_num_seqs` 1024, `gpu_memory_utilization` 0.5) on vLLM's V1 engine
    (its default from 0.8, its only one from 0.11)."""

    enforce_eager: bool = True
    max_num_seqs: int = 1024
    gpu_memory_utilization: float = 0.5
    vllm_engine: Literal["v0", "v1"] = "v1"


class Coefficients(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory: float = Field(ge=0, description="x roofline memory time of a decode step")
    generation_compute: float = Field(
        ge=0, description="x peak-FLOPs time of the matmuls of every prefilled and decoded token"
    )
    host_v0_s_per_seq: float = Field(ge=0, description="per sequence and decode step, vLLM V0")
    host_v1_s_per_seq: float = Field(ge=0, description="per sequence and decode step, vLLM V1")
    eager_v0_s_per_layer: float = Field(ge=0, description="per decode step and layer, eager V0")
    eager_v1_s_per_layer: float = Field(ge=0, description="per decode step and layer, eager V1")
    lora_s_per_seq_layer: float = Field(ge=0, description="per sequence and layer, LoRA adapter")
    switch_s: float = Field(ge=0, description="phase switch per step")
    switch_lora_s_per_layer: float = Field(
        ge=0, description="phase switch per layer, LoRA adapter (layered summon)"
    )
    switch_offload_s: float = Field(ge=0, description="phase switch, parameters offloaded")
    forward: float = Field(ge=0, description="x peak-FLOPs time of a scoring pass (1 / MFU)")
    offload_pass_s_per_layer: float = Field(
        ge=0, description="per scoring pass and layer, parameters offloaded"
    )
    offload_pass_s_per_gb: float = Field(
        ge=0, description="per scoring pass and GB of weights, parameters offloaded"
    )
    train: float = Field(ge=0, description="x peak-FLOPs time of an update (1 / MFU)")
    offload_update_s_per_layer: float = Field(
        ge=0, description="per update and layer, parameters offloaded"
    )
    micro_s_per_layer: float = Field(
        0.0, ge=0, description="per scoring micro-batch and layer on a data-parallel rank"
    )
    forward_s_per_pflop: float = Field(
        0.0, ge=0, description="per PFLOP of a scoring pass, whatever the GPU's peak"
    )
    train_s_per_pflop: float = Field(
        0.0, ge=0, description="per PFLOP of an update, whatever the GPU's peak"
    )
    train_micro_s_per_layer: float = Field(
        0.0, ge=0, description="per training micro-batch and layer on a data-parallel rank"
    )

    def at_host_speed(self, factor: float) -> Coefficients:
        """The model on a host that does its per-op work (PER_OP_TERMS) `factor` times as slowly
        as the fitted runs' hosts did; the terms that scale a roofline time stay."""
        return self.model_copy(update={t: getattr(self, t) * factor for t in PER_OP_TERMS})


# The terms that count seconds of host-side work (launches, scheduling, synchronisations, the
# phase switch, moving offloaded weights) rather than scaling a roofline time: the ones a slower
# or faster host CPU moves. No verl log names its host, so no input carries this.
PER_OP_TERMS = (
    "host_v0_s_per_seq",
    "host_v1_s_per_seq",
    "eager_v0_s_per_layer",
    "eager_v1_s_per_layer",
    "lora_s_per_seq_layer",
    "switch_s",
    "switch_lora_s_per_layer",
    "switch_offload_s",
    "micro_s_per_layer",
    "train_micro_s_per_layer",
    "offload_pass_s_per_layer",
    "offload_update_s_per_layer",
)


def compute_s_per_flop(at_peak: float, per_pflop: float, gpu: GpuSpec) -> float:
    """Seconds a FLOP of a scoring pass or an update takes: `at_peak` x the time at the GPU's
    peak, plus `per_pflop` seconds per PFLOP whatever the GPU."""
    return at_peak / gpu.bf16_flops + per_pflop / PFLOP


def train_flops_per_token(model: ModelSpec, lora: bool, recompute: bool = False) -> float:
    """6 x params (forward and backward); with LoRA no weight gradients: 4 x params; gradient
    checkpointing runs each layer's forward again in the backward: 2 x params more."""
    return ((4 if lora else 6) + (2 if recompute else 0)) * model.params


def calibrated_profile(
    name: str,
    c: Coefficients,
    model: ModelSpec,
    gpu: GpuSpec,
    tp: int,
    engine: EngineArgs,
    layout: TrainLayout,
    lora: bool = False,
) -> TimeProfile:
    """`tp` is the rollout's tensor parallel; `layout` is the trainer's, for scoring and
    training."""
    bandwidth, flops = tp * gpu.bandwidth, tp * gpu.bf16_flops
    v1 = engine.vllm_engine == "v1"
    launch = (c.eager_v1_s_per_layer if v1 else c.eager_v0_s_per_layer) * engine.enforce_eager
    host = c.host_v1_s_per_seq if v1 else c.host_v0_s_per_seq
    matmuls = c.generation_compute * 2 * model.params / flops  # a token's, prefilled or decoded
    budget = engine.gpu_memory_utilization * gpu.memory_bytes
    kv_free = budget - model.weight_bytes / tp - ACTIVATION_RESERVE
    forward, update = 2 * model.params, train_flops_per_token(model, lora, layout.recompute)
    stretch = layout.stretch()
    score_micro = layout.micro_batch_layers_per_token(model.layers, train=False)
    train_micro = layout.micro_batch_layers_per_token(model.layers, train=True)
    score_s = compute_s_per_flop(c.forward, c.forward_s_per_pflop, gpu) * forward
    train_s = compute_s_per_flop(c.train, c.train_s_per_pflop, gpu) * update
    return TimeProfile(
        name=name,
        prefill_s_per_token=matmuls,
        decode_s_per_step=c.memory * model.weight_bytes / bandwidth + launch * model.layers,
        decode_s_per_seq=host + matmuls + c.lora_s_per_seq_layer * model.layers * lora,
        decode_s_per_context_token=c.memory * model.kv_bytes_per_token / bandwidth,
        score_s_per_token=score_s * stretch
        + comm_s_per_token(model, gpu, layout, score_s, train=False, lora=lora),
        score_micro_s_per_token=c.micro_s_per_layer * score_micro,
        train_s_per_token=train_s * stretch
        + comm_s_per_token(model, gpu, layout, train_s, train=True, lora=lora),
        train_micro_s_per_token=c.train_micro_s_per_layer * train_micro,
        cold_start_s=COLD_START_S + model.weight_bytes / LOAD_BYTES_PER_S,
        max_batch=engine.max_num_seqs,
        gpus_per_actor=tp,
        kv_capacity_tokens=max(1, int(tp * kv_free // model.kv_bytes_per_token)),
        phase_switch_s=c.switch_s
        + c.switch_lora_s_per_layer * model.layers * lora
        + c.switch_offload_s * layout.offload,
        score_s_per_pass=layout.offload
        * (
            c.offload_pass_s_per_layer * model.layers
            + c.offload_pass_s_per_gb * model.weight_bytes / GB
        ),
        train_s_per_update=layout.offload * c.offload_update_s_per_layer * model.layers,
    )


SHIPPED = files("rlguard.runtime") / "data" / "verl_calibration.yaml"


def load_coefficients(path: Path | None = None) -> Coefficients:
    """The coefficients fitted to the shipped measurements (`benchmarks/bench_calibration.py`
    writes them), or a file of the same fields."""
    where = str(path or "runtime/data/verl_calibration.yaml")
    text = None if path else SHIPPED.read_text("utf-8")
    raw = read_mapping(path or where, text)
    return build(Coefficients, raw.get("coefficients", raw), where)


def save_coefficients(c: Coefficients, path: Path, about: dict[str, object]) -> None:
    write_text(path, yaml.safe_dump({**about, "coefficients": c.model_dump()}, sort_keys=False))
