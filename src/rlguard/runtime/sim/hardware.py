"""What the runtime's models need to know of a model and a GPU: sizes from the model's HF
config.json and the GPU's datasheet, one catalog for the shipped profiles (sim/roofline.py), the
measured verl runs (calib/) and users' setups.

Model numbers: each model's config.json on the Hugging Face Hub (parameter count as the model
card states it). GPU numbers: NVIDIA's datasheets, dense BF16 (no sparsity). The interconnect is
what a ring collective moves per GPU and second (NCCL's bus bandwidth). On NVLink it is the
datasheet's GPU-to-GPU bandwidth in one direction (half its bidirectional figure; NCCL reaches
it): 900 GB/s on H100 SXM and H20, 400 GB/s on H800 SXM, 600 GB/s on A100 SXM. L40S and L20
have no NVLink, only PCIe Gen4 x16, whose 32 GB/s a direction NCCL does not reach through PCIe
switches and root ports: its all-reduce measures 18-26 GB/s on such GPUs (docs/runtime.md, "How
slow the links are"), and the catalog takes the 22 GB/s measured with peer-to-peer transfers.
A GeForce RTX 4090 (Ada, PCIe Gen4, 165.2 TFLOPS dense BF16 with FP32 accumulate in NVIDIA's Ada
whitepaper) has no peer-to-peer on NVIDIA's driver, so its collectives go through host memory: 18
GB/s in the same NCCL issue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from rlguard.errors import InputError

Spec = TypeVar("Spec")

GB = 1e9


@dataclass(frozen=True)
class ModelSpec:
    name: str
    params: float
    layers: int
    kv_heads: int
    head_dim: int
    vocab: int
    hidden: int  # what a tensor-parallel all-reduce moves per token

    @property
    def weight_bytes(self) -> float:
        return 2 * self.params  # bf16

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2  # K and V, bf16

    def describe(self) -> str:
        return (
            f"{self.name} config.json: {self.params / 1e9:.2f}B params, {self.layers} layers, "
            f"{self.kv_heads} KV heads x {self.head_dim}, vocab {self.vocab}; bf16 weights "
            f"{self.weight_bytes / GB:.1f} GB; KV cache {self.kv_bytes_per_token} B per token "
            f"(2 x layers x KV heads x head_dim x 2 B)"
        )


@dataclass(frozen=True)
class GpuSpec:
    name: str
    memory_bytes: float
    bandwidth: float  # bytes per second
    bf16_flops: float  # dense, per second
    interconnect: float  # a ring collective's bytes per GPU and second (bus bandwidth)

    def describe(self, tp: int) -> str:
        return (
            f"NVIDIA {self.name} datasheet: {self.memory_bytes / GB:.0f} GB, "
            f"{self.bandwidth / GB:.0f} GB/s, {self.bf16_flops / 1e12:.0f} TFLOPS dense BF16; "
            f"tensor parallel {tp}"
        )


QWEN25_05B = ModelSpec("Qwen/Qwen2.5-0.5B", 0.494e9, 24, 2, 64, 151936, 896)
QWEN25_15B = ModelSpec("Qwen/Qwen2.5-1.5B", 1.54e9, 28, 2, 128, 151936, 1536)
QWEN25_3B = ModelSpec("Qwen/Qwen2.5-3B", 3.09e9, 36, 2, 128, 151936, 2048)
QWEN25_7B = ModelSpec("Qwen/Qwen2.5-7B", 7.61e9, 28, 4, 128, 152064, 3584)
QWEN25_14B = ModelSpec("Qwen/Qwen2.5-14B", 14.7e9, 48, 8, 128, 152064, 5120)
QWEN25_32B = ModelSpec("Qwen/Qwen2.5-32B", 32.5e9, 64, 8, 128, 152064, 5120)
QWEN25_72B = ModelSpec("Qwen/Qwen2.5-72B", 72.7e9, 80, 8, 128, 152064, 8192)
QWEN2_7B = ModelSpec("Qwen/Qwen2-7B", 7.62e9, 28, 4, 128, 152064, 3584)
QWEN3_14B = ModelSpec("Qwen/Qwen3-14B", 14.8e9, 40, 8, 128, 151936, 5120)
DEEPSEEK_LLM_7B = ModelSpec("deepseek-ai/deepseek-llm-7b", 6.91e9, 30, 32, 128, 102400, 4096)
GEMMA2_2B = ModelSpec("google/gemma-2-2b", 2.61e9, 26, 4, 256, 256000, 2304)
LLAMA31_70B = ModelSpec("meta-llama/Llama-3.1-70B", 70.6e9, 80, 8, 128, 128256, 8192)

# NCCL all-reduce bus bandwidth over PCIe Gen4 x16 with peer-to-peer (github.com/NVIDIA/nccl
# issue 1603); the link's own rate is 32 GB/s a direction
PCIE4 = 22 * GB
PCIE4_THROUGH_HOST = 18 * GB
L40S = GpuSpec("L40S", 48 * GB, 864 * GB, 362e12, PCIE4)
L20 = GpuSpec("L20", 48 * GB, 864 * GB, 119.5e12, PCIE4)
A100 = GpuSpec("A100 80GB SXM", 80 * GB, 2039 * GB, 312e12, 300 * GB)
A100_40GB = GpuSpec("A100 40GB SXM", 40 * GB, 1555 * GB, 312e12, 300 * GB)
H100 = GpuSpec("H100 SXM", 80 * GB, 3350 * GB, 989e12, 450 * GB)
H800 = GpuSpec("H800 SXM", 80 * GB, 3350 * GB, 989e12, 200 * GB)
H20 = GpuSpec("H20", 96 * GB, 4000 * GB, 148e12, 450 * GB)
RTX4090 = GpuSpec("GeForce RTX 4090", 24 * GB, 1008 * GB, 165.2e12, PCIE4_THROUGH_HOST)

MODELS = {
    "qwen2.5-0.5b": QWEN25_05B,
    "qwen2.5-1.5b": QWEN25_15B,
    "qwen2.5-3b": QWEN25_3B,
    "qwen2.5-7b": QWEN25_7B,
    "qwen2.5-14b": QWEN25_14B,
    "qwen2.5-32b": QWEN25_32B,
    "qwen2.5-72b": QWEN25_72B,
    "qwen2-7b": QWEN2_7B,
    "qwen3-14b": QWEN3_14B,
    "deepseek-llm-7b": DEEPSEEK_LLM_7B,
    "gemma-2-2b": GEMMA2_2B,
    "llama3.1-70b": LLAMA31_70B,
}
GPUS = {
    "l40s": L40S,
    "l20": L20,
    "a100": A100,
    "a100-40gb": A100_40GB,
    "h100": H100,
    "h800": H800,
    "h20": H20,
    "rtx4090": RTX4090,
}


def model_spec(name: str, where: str) -> ModelSpec:
    """A catalog model by key (case-insensitive); `where` names the file and field in errors."""
    return _lookup(MODELS, name, where)


def gpu_spec(name: str, where: str) -> GpuSpec:
    return _lookup(GPUS, name, where)


def _lookup(catalog: dict[str, Spec], name: str, where: str) -> Spec:
    try:
        return catalog[name.lower()]
    except KeyError:
        raise InputError(f"{where}: unknown {name!r} (known: {', '.join(catalog)})") from None
