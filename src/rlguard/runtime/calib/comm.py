"""The communication a trainer's layout adds to scoring and training, at the GPU's interconnect
bandwidth (runtime/sim/hardware.py: NVLink's datasheet, or what NCCL measures over PCIe), in
GPU-seconds per token like the compute beside it. No coefficient: nothing in it is fitted, so a
run the fit leaves out is predicted, not absorbed.

Ring collectives over n GPUs (NCCL's algorithm inside a node): an all-reduce of S bytes moves
2(n-1)/n x S through each GPU's link, an all-gather or a reduce-scatter (n-1)/n x S.

- Megatron tensor parallel (TP t): every layer all-reduces its activations (hidden x 2 B a token)
  twice in the forward and twice more in the backward; sequence parallel swaps each for an
  all-gather and a reduce-scatter of the same volume. On the critical path: the logged configs
  have `tp_comm_overlap=False`. A layer's all-reduce holds its t GPUs, so per token that is
  layers x all-reduces x t x 2(t-1)/t x 2 hidden / bandwidth GPU-seconds, whatever PP and DP are.
- Megatron pipeline parallel (PP p, VPP v): with m micro-batches per optimizer step on each
  data-parallel rank, a stage idles (p-1)/(v m + p-1) of the time, so the stage's compute and TP
  traffic stretch by (v m + p - 1)/(v m). Activations sent between stages (2 hidden bytes a token
  and boundary) are left out: the interleaved schedule overlaps them (`overlap_p2p_comm=True`).
- Megatron's distributed optimizer over the d data-parallel replicas: each optimizer step
  reduce-scatters fp32 gradients and all-gathers bf16 weights of a replica's 1/(t p) share.
- FSDP (each of n GPUs holds 1/n of the weights): every micro-batch all-gathers the bf16 weights
  for its forward; an update gathers them again for the backward and reduce-scatters fp32
  gradients (LoRA's adapter gradients are taken as none). FSDP prefetches the next layer's
  weights during this layer's compute, so only what exceeds the micro-batch's compute shows: the
  compute as the step model prices it (a real H100 runs a 7B pass at about half its peak,
  runtime/data/kernel_passes.csv), which the caller gives in seconds a token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rlguard.runtime.sim.hardware import GpuSpec, ModelSpec

# Verl's GRPO example as the qwen2-7b-fsdp2 run logs it (runtime/data/verl_steps.csv).
EXAMPLE_MICRO_BATCH, EXAMPLE_MINI_BATCH = 40, 256
ALL_REDUCES_PER_LAYER = {False: 2, True: 4}  # a scoring pass; an update (forward and backward)


def ring_all_reduce_s(nbytes: float, n: int, bandwidth: float) -> float:
    return 2 * (n - 1) / n * nbytes / bandwidth


def ring_all_gather_s(nbytes: float, n: int, bandwidth: float) -> float:
    """An all-gather of `nbytes` in all, or a reduce-scatter: the same traffic."""
    return (n - 1) / n * nbytes / bandwidth


def pipeline_stretch(pp: int, vpp: int, micro_batches: int) -> float:
    """How much longer a pipeline takes than its stages' work: (v m + p - 1) / (v m)."""
    return (vpp * micro_batches + pp - 1) / (vpp * micro_batches)


@dataclass(frozen=True)
class TrainLayout:
    """How the trainer splits the model and the batch: `micro_batch` sequences per GPU at a time,
    `mini_batch` sequences per optimizer step, `batch` sequences a step, `sequence_tokens` prompt
    and response a sequence."""

    strategy: Literal["fsdp", "megatron"]
    n_gpus: int
    tp: int
    pp: int
    vpp: int
    micro_batch: int
    mini_batch: int
    batch: int
    sequence_tokens: float
    log_prob_micro_batch: int | None = None  # scoring's micro-batch; None: `micro_batch`
    recompute: bool = False  # gradient checkpointing: the update runs each forward twice
    offload: bool = False  # parameters kept on the CPU between passes (verl's param_offload)

    @property
    def dp(self) -> int:
        return self.n_gpus // (self.tp * self.pp)

    @property
    def score_micro_batch(self) -> int:
        return self.log_prob_micro_batch or self.micro_batch

    def micro_batch_sequences(self, train: bool) -> float:
        """Sequences a micro-batch holds. A data-parallel rank splits its share into whole
        micro-batches of at most the configured size, so a share smaller than one micro-batch
        still runs one: an update's share is an optimizer step's (`mini_batch / dp`), a scoring
        pass's the whole step's (`batch / dp`). Verl's 0.5B GRPO example (16 sequences a rank an
        optimizer step, micro-batches of 27) runs four updates of one micro-batch of 16, where
        counting tokens gives 2.4 micro-batches of 27."""
        share, count = self._rank_split(train)
        return share / count

    def _rank_split(self, train: bool) -> tuple[float, int]:
        """(sequences a data-parallel rank gets, the whole micro-batches it runs them in): an
        optimizer step's share in an update, the step's in a scoring pass."""
        micro, sequences = (
            (self.micro_batch, self.mini_batch) if train else (self.score_micro_batch, self.batch)
        )
        share = sequences / self.dp
        return share, math.ceil(share / micro)

    def micro_batch_layers_per_token(self, layers: int, train: bool) -> float:
        """Micro-batch-layers a token costs, in GPU terms: each data-parallel rank runs its
        micro-batches of `micro` sequences one after another through its `layers / pp` layers
        (the pipeline's stages in parallel, stretched by its bubble), so a token of a
        `sequence_tokens`-long sequence takes tp x pp / (micro x sequence_tokens) x layers / pp
        x stretch of the n GPUs' time. Times a per-micro-batch-layer overhead it is GPU-seconds
        a token, like the compute beside it."""
        micro = self.micro_batch_sequences(train)
        return self.tp * layers * self.stretch() / (micro * self.sequence_tokens)

    def stretch(self) -> float:
        """The pipeline bubble's factor on compute and TP traffic (1 without pipeline)."""
        _, micro_batches = self._rank_split(train=True)  # an optimizer step's, on each replica
        return pipeline_stretch(self.pp, self.vpp, max(1, micro_batches))


class TrainerSettings(BaseModel):
    """The trainer's layout as verl's config states it (`actor.strategy`, `megatron.*_size`,
    `ppo_micro_batch_size_per_gpu`, `ppo_mini_batch_size` in prompts); defaults: verl's GRPO
    example with FSDP."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy: Literal["fsdp", "fsdp2", "megatron"] = "fsdp"
    tp: int = Field(1, gt=0, description="Megatron tensor parallel")
    pp: int = Field(1, gt=0, description="Megatron pipeline stages")
    vpp: int = Field(1, gt=0, description="Megatron virtual stages per pipeline stage")
    micro_batch_per_gpu: int = Field(EXAMPLE_MICRO_BATCH, gt=0)
    mini_batch_prompts: int = Field(EXAMPLE_MINI_BATCH, gt=0)
    log_prob_micro_batch_per_gpu: int | None = Field(
        None, gt=0, description="scoring's micro-batch (`log_prob_micro_batch_size_per_gpu`)"
    )
    gradient_checkpointing: bool = Field(
        False,
        description="activation recompute in the update (`enable_gradient_checkpointing`; "
        "Megatron recomputes only with a `recompute_granularity`)",
    )
    param_offload: bool = Field(
        False,
        description="parameters kept on the CPU and brought back for every pass and update "
        "(`fsdp_config.param_offload`)",
    )

    def check(self, n_gpus: int) -> None:
        """A Megatron layout must split the GPUs into whole data-parallel replicas."""
        if n_gpus % (self.tp * self.pp):
            raise ValueError(f"trainer tp x pp = {self.tp * self.pp} does not divide {n_gpus} GPUs")

    def layout(self, n_gpus: int, prompts: int, samples: int, tokens: float) -> TrainLayout:
        """The layout of a step of `prompts` x `samples` sequences of `tokens` mean tokens."""
        return TrainLayout(
            "megatron" if self.strategy == "megatron" else "fsdp",
            n_gpus,
            self.tp,
            self.pp,
            self.vpp,
            self.micro_batch_per_gpu,
            min(self.mini_batch_prompts, prompts) * samples,
            prompts * samples,
            tokens,
            self.log_prob_micro_batch_per_gpu,
            self.gradient_checkpointing,
            self.param_offload,
        )


def comm_s_per_token(
    model: ModelSpec,
    gpu: GpuSpec,
    layout: TrainLayout,
    compute_s_per_token: float,
    train: bool,
    lora: bool,
) -> float:
    """Exposed communication of a scoring pass (`train` False) or an update, GPU-seconds a token;
    `compute_s_per_token` is the pass's compute, behind which FSDP hides its transfers."""
    if layout.strategy == "megatron":
        return _megatron(model, gpu, layout, train, lora)
    tokens = layout.micro_batch_sequences(train) * layout.sequence_tokens
    return fsdp_exposed_s_per_token(
        model, gpu, layout.n_gpus, tokens, compute_s_per_token, train, lora
    )


def tensor_parallel_s_per_token(model: ModelSpec, gpu: GpuSpec, tp: int, train: bool) -> float:
    """Megatron's TP all-reduces of a scoring pass or an update, GPU-seconds a token."""
    each = ring_all_reduce_s(2 * model.hidden, tp, gpu.interconnect)
    return model.layers * ALL_REDUCES_PER_LAYER[train] * tp * each


def optimizer_sync_s(model: ModelSpec, gpu: GpuSpec, tp: int, pp: int, dp: int) -> float:
    """Wall seconds of one optimizer step's sync by Megatron's distributed optimizer."""
    share = model.params / (tp * pp)
    bw = gpu.interconnect
    return ring_all_gather_s(4 * share, dp, bw) + ring_all_gather_s(2 * share, dp, bw)


def fsdp_exposed_s_per_token(
    model: ModelSpec,
    gpu: GpuSpec,
    n_gpus: int,
    micro_tokens: float,
    compute_s_per_token: float,
    train: bool,
    lora: bool,
) -> float:
    """FSDP's gathers (and an update's gradient reduce-scatter) that a micro-batch of
    `micro_tokens` tokens per GPU does not hide behind its compute, GPU-seconds a token."""
    gather = ring_all_gather_s(model.weight_bytes, n_gpus, gpu.interconnect)
    comm = gather
    if train:
        grads = 0.0 if lora else ring_all_gather_s(4 * model.params, n_gpus, gpu.interconnect)
        comm += gather + grads
    return max(0.0, comm - micro_tokens * compute_s_per_token) / micro_tokens


def _megatron(
    model: ModelSpec, gpu: GpuSpec, layout: TrainLayout, train: bool, lora: bool
) -> float:
    tensor_parallel = tensor_parallel_s_per_token(model, gpu, layout.tp, train) * layout.stretch()
    if not train or lora:
        return tensor_parallel
    sync = optimizer_sync_s(model, gpu, layout.tp, layout.pp, layout.dp)
    return tensor_parallel + sync * layout.n_gpus / (layout.mini_batch * layout.sequence_tokens)
