"""The shipped time profiles, derived from datasheets and model configs by one rule for all.

Every number of a shipped profile (runtime/data/profiles/*.yaml) is computed here and written
beside the reasoning that produced it; `python -m rlguard.runtime.sim.roofline` rewrites the files
and a test checks that the shipped files are exactly this derivation. The efficiencies and memory
settings are in `Assumptions`, each with its source or marked as an assumption; docs/runtime.md
discusses them.

Decode is a roofline: a step reads the weights once plus every running sequence's KV cache at
`bandwidth_efficiency` of the memory bandwidth, and never takes less than its matmuls (2 x params
FLOPs per sequence) need at `decode_mfu` of peak.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlguard.runtime.policies.profiles import TimeProfile, save_profile
from rlguard.runtime.sim.hardware import (
    A100,
    GB,
    H100,
    L40S,
    LLAMA31_70B,
    QWEN25_7B,
    QWEN25_14B,
    QWEN25_32B,
    GpuSpec,
    ModelSpec,
)


@dataclass(frozen=True)
class Assumptions:
    """What the datasheets do not give. Sources in docs/runtime.md ("Shipped time profiles")."""

    bandwidth_efficiency: float = 0.75  # vLLM batch-1 decode reaches ~77% of the HBM roofline
    decode_mfu: float = 0.5  # assumption: matmul efficiency of a large decode batch
    prefill_mfu: float = 0.5  # assumption: vLLM prefill is a large-token-batch forward
    forward_mfu: float = 0.35  # verl's measured log-prob passes (scoring), Qwen2.5-7B
    train_mfu: float = 0.35  # verl's measured actor-update MFU (6 x params FLOPs per token)
    gpu_memory_utilization: float = 0.6  # verl's GSM8K GRPO example
    activation_reserve_bytes: float = 2 * GB  # assumption: vLLM's profiled activation peak
    max_num_seqs: int = 1024  # verl's rollout default
    container_start_s: float = 25.0  # REFERENCE.md s5: container + CUDA init
    load_bytes_per_s: float = 1.55 * GB  # ServerlessLLM: ~130 GB in 84 s (PyTorch/Safetensors)


SHIPPED = {
    "qwen2.5-7b-l40s": (QWEN25_7B, L40S),
    "qwen2.5-7b-a100": (QWEN25_7B, A100),
    "qwen2.5-7b-h100": (QWEN25_7B, H100),
    "qwen2.5-14b-l40s": (QWEN25_14B, L40S),
    "qwen2.5-32b-l40s": (QWEN25_32B, L40S),
    "qwen2.5-32b-a100": (QWEN25_32B, A100),
    "llama3.1-70b-l40s": (LLAMA31_70B, L40S),
    "llama3.1-70b-h100": (LLAMA31_70B, H100),
}


def _round(x: float) -> float:
    return float(f"{x:.4g}")


def tensor_parallel(model: ModelSpec, gpu: GpuSpec, a: Assumptions) -> int:
    """The smallest power of two at which the weights take at most three quarters of vLLM's
    per-GPU budget, leaving at least a quarter of it for the KV cache."""
    budget = a.gpu_memory_utilization * gpu.memory_bytes
    tp = 1
    while model.weight_bytes / tp > 0.75 * budget:
        tp *= 2
    return tp


def derive_profile(
    name: str,
    model: ModelSpec,
    gpu: GpuSpec,
    a: Assumptions | None = None,
    tp: int | None = None,
) -> tuple[TimeProfile, dict[str, str], dict[str, str]]:
    """(profile, derivation per field, model/hardware description); `tp` overrides the tensor
    parallel rule (a measured run's own)."""
    a = a or Assumptions()
    tp = tp or tensor_parallel(model, gpu, a)
    bw = tp * gpu.bandwidth * a.bandwidth_efficiency  # the actor's GPUs read in parallel
    flops = 2 * model.params
    weights_gb = model.weight_bytes / GB
    per_gpu_budget = a.gpu_memory_utilization * gpu.memory_bytes
    kv_free = per_gpu_budget - model.weight_bytes / tp - a.activation_reserve_bytes
    kv_tokens = int(tp * kv_free // model.kv_bytes_per_token)
    logits_bytes = 2 * 4 * model.vocab  # fp32 logits written and read once per sequence
    bw_note = f"{tp} x {gpu.bandwidth / GB:.0f} GB/s x {a.bandwidth_efficiency} achieved"
    profile = TimeProfile(
        name=name,
        prefill_s_per_token=_round(flops / (tp * gpu.bf16_flops * a.prefill_mfu)),
        decode_s_per_step=_round(model.weight_bytes / bw),
        decode_s_per_seq=_round(logits_bytes / bw),
        score_s_per_token=_round(flops / (gpu.bf16_flops * a.forward_mfu)),
        train_s_per_token=_round(3 * flops / (gpu.bf16_flops * a.train_mfu)),
        cold_start_s=_round(a.container_start_s + model.weight_bytes / a.load_bytes_per_s),
        max_batch=a.max_num_seqs,
        gpus_per_actor=tp,
        decode_s_per_context_token=_round(model.kv_bytes_per_token / bw),
        decode_compute_s_per_seq=_round(flops / (tp * gpu.bf16_flops * a.decode_mfu)),
        kv_capacity_tokens=kv_tokens,
    )
    derivation = {
        "prefill_s_per_token": f"compute-bound: 2 x {model.params:.3g} FLOP / ({tp} GPU(s) x "
        f"{gpu.bf16_flops / 1e12:.0f} TFLOPS x MFU {a.prefill_mfu})",
        "decode_s_per_step": f"memory-bound: read all weights once per step: {weights_gb:.1f} GB "
        f"/ ({bw_note} bandwidth)",
        "decode_s_per_seq": f"fp32 logits of one sequence written and read ({logits_bytes} B) at "
        f"the same bandwidth",
        "decode_s_per_context_token": f"reading one token of KV cache "
        f"({model.kv_bytes_per_token} B) at the same bandwidth: a step's memory time grows "
        f"with the total context of its batch",
        "decode_compute_s_per_seq": f"compute floor of a step: 2 x {model.params:.3g} FLOP per "
        f"sequence / ({tp} x {gpu.bf16_flops / 1e12:.0f} TFLOPS x MFU {a.decode_mfu}); a step "
        f"takes the larger of its memory time and this times the batch",
        "score_s_per_token": f"GPU-seconds: one forward, 2 x {model.params:.3g} FLOP / "
        f"({gpu.bf16_flops / 1e12:.0f} TFLOPS x MFU {a.forward_mfu}, verl's measured log-prob "
        f"passes)",
        "train_s_per_token": f"GPU-seconds: forward + backward = 6 x {model.params:.3g} FLOP / "
        f"({gpu.bf16_flops / 1e12:.0f} TFLOPS x MFU {a.train_mfu}, verl's measured actor "
        f"update, which counts 6 x params FLOPs per token)",
        "cold_start_s": f"container + CUDA init {a.container_start_s:.0f} s + loading "
        f"{weights_gb:.1f} GB at {a.load_bytes_per_s / GB:.2f} GB/s (ServerlessLLM: "
        f"LLaMA-2-70B, ~130 GB, loads in 84 s with PyTorch/Safetensors)",
        "max_batch": f"verl's rollout max_num_seqs ({a.max_num_seqs}); the KV cache is the "
        f"binding limit (kv_capacity_tokens)",
        "gpus_per_actor": f"tensor parallel {tp}: {weights_gb / tp:.1f} GB of weights per GPU, "
        f"at most 3/4 of vLLM's {per_gpu_budget / GB:.1f} GB budget per GPU",
        "kv_capacity_tokens": f"{tp} GPUs x (gpu_memory_utilization {a.gpu_memory_utilization}"
        f" x {gpu.memory_bytes / GB:.0f} GB - {weights_gb / tp:.1f} GB weights - "
        f"{a.activation_reserve_bytes / GB:.0f} GB activations) / {model.kv_bytes_per_token} B "
        f"per token",
    }
    lower_bound = "0: the roofline is a lower bound; calibrated profiles (calib/) fit it"
    derivation |= dict.fromkeys(
        (
            "phase_switch_s",
            "score_s_per_pass",
            "train_s_per_update",
            "score_micro_s_per_token",
            "train_micro_s_per_token",
        ),
        lower_bound,
    )
    about = {"model": model.describe(), "hardware": gpu.describe(tp)}
    return profile, derivation, about


def write_shipped(directory: Path) -> list[Path]:
    paths = []
    for name, (model, gpu) in SHIPPED.items():
        profile, derivation, about = derive_profile(name, model, gpu)
        path = directory / f"{name}.yaml"
        save_profile(profile, path, derivation, about)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write_shipped(Path(__file__).resolve().parents[1] / "data" / "profiles"):
        print(written)
