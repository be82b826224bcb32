"""A measured verl step as a simulator job: its setup, its lengths, its profile under given
coefficients, and the schedule features the fit needs.

The lengths of a measured step are not logged one by one, only their mean, max and clip ratio:
calib/lengths.py turns those into a workload, with the simulator's usual within-prompt
correlation. Each row draws its own lengths with a seed of its own.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from rlguard.runtime.calib.coefficients import (
    PFLOP,
    Coefficients,
    EngineArgs,
    calibrated_profile,
    compute_s_per_flop,
    train_flops_per_token,
)
from rlguard.runtime.calib.comm import comm_s_per_token
from rlguard.runtime.calib.lengths import workload_from_stats
from rlguard.runtime.calib.measured import MeasuredStep
from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.decode import simulate_generation
from rlguard.runtime.sim.hardware import GB, GpuSpec, ModelSpec, gpu_spec, model_spec
from rlguard.runtime.sim.serverful import serverful_step
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.workload import PromptPool, TokenBatch

GENERATION = (
    "memory",
    "generation_compute",
    "host_v0_s_per_seq",
    "host_v1_s_per_seq",
    "eager_v0_s_per_layer",
    "eager_v1_s_per_layer",
    "lora_s_per_seq_layer",
)
SWITCH = ("switch_s", "switch_lora_s_per_layer", "switch_offload_s")
SCORING = (
    "forward",
    "offload_pass_s_per_layer",
    "offload_pass_s_per_gb",
    "micro_s_per_layer",
    "forward_s_per_pflop",
)
TRAINING = ("train", "offload_update_s_per_layer", "train_micro_s_per_layer", "train_s_per_pflop")
# each phase's compute rate: (x the time at peak, seconds per PFLOP)
COMPUTE_TERMS = {
    "scoring": ("forward", "forward_s_per_pflop"),
    "training": ("train", "train_s_per_pflop"),
}


def engine_of(row: MeasuredStep) -> EngineArgs:
    d = EngineArgs()
    return EngineArgs(
        d.enforce_eager if row.enforce_eager is None else row.enforce_eager,
        row.max_num_seqs or d.max_num_seqs,
        row.gpu_memory_utilization or d.gpu_memory_utilization,
        row.vllm_engine,
    )


def row_setup(row: MeasuredStep) -> Setup:
    workload = workload_from_stats(
        row.response_length_mean,
        row.max_response_length,
        row.response_clip_ratio or 0.0,
        row.response_length_max,
        row.samples,
        row.prompt_length_mean,
        row.max_prompt_length,
        dataset_prompts=row.prompts_per_step,
    )
    return Setup(
        name=f"{row.run} step {row.step}",
        n_gpus=row.n_gpus,
        profile=row.run,
        algorithm="ppo" if row.critic else "grpo",
        reference_model=row.ref_s is not None,
        remove_padding=row.remove_padding,
        critic_remove_padding=row.critic_remove_padding,
        prompts_per_step=row.prompts_per_step,
        k=row.n_samples,
        workload=workload,
    )


@dataclass(frozen=True)
class Replay:
    """A measured step ready to simulate: its setup, drawn batch, model, GPU and engine."""

    row: MeasuredStep
    setup: Setup
    batch: TokenBatch
    model: ModelSpec
    gpu: GpuSpec
    engine: EngineArgs

    def profile(self, c: Coefficients) -> TimeProfile:
        row = self.row
        lora = row.lora_rank > 0
        return calibrated_profile(
            row.run, c, self.model, self.gpu, row.rollout_tp, self.engine, row.layout(), lora
        )


def replay(row: MeasuredStep, draw: int = 0) -> Replay:
    """The step with its lengths drawn from the row's own seed; another `draw` gives another
    batch of the same statistics (how much an error owes to one draw)."""
    setup = row_setup(row)
    seed = zlib.crc32(f"{row.run}/{row.step}{f'/{draw}' if draw else ''}".encode())
    batch = PromptPool(setup.workload, seed).batch(0, 0, setup.prompts_per_step, setup.k)
    model, gpu = model_spec(row.model, "model"), gpu_spec(row.gpu, "gpu")
    return Replay(row, setup, batch, model, gpu, engine_of(row))


def simulate(job: Replay, c: Coefficients) -> dict[str, float]:
    """The simulated verl baseline's phases (seconds) for this measured step."""
    report = serverful_step(job.batch, job.setup, job.profile(c), Prices())
    return dict(report.phases)


def generation_features(job: Replay) -> tuple[np.ndarray, np.ndarray]:
    """((actors, len(GENERATION)), (len(SWITCH),)): each actor's generation time and the phase
    switch are these rows times the coefficients (dot product). The schedule does not depend on
    the coefficients (no compute floor, no migration), so one simulation gives the counts."""
    model, tp, engine = job.model, job.row.rollout_tp, job.engine
    lora, offload = job.row.lora_rank > 0, job.row.layout().offload
    v1, eager = engine.vllm_engine == "v1", engine.enforce_eager
    split = equal_count_split(len(job.batch.keys), job.row.n_gpus // tp)
    gen = simulate_generation(split, job.batch, job.profile(_UNIT), dedup=True, tau=None)
    bandwidth, flops = tp * job.gpu.bandwidth, tp * job.gpu.bf16_flops
    actors = np.array(
        [
            [
                (w.steps * model.weight_bytes + w.context_tokens * model.kv_bytes_per_token)
                / bandwidth,
                (w.seq_steps + w.prefill_tokens) * 2 * model.params / flops,
                w.seq_steps * (not v1),
                w.seq_steps * v1,
                w.steps * model.layers * eager * (not v1),
                w.steps * model.layers * eager * v1,
                w.seq_steps * model.layers * lora,
            ]
            for w in gen.actor_work
        ]
    )
    return actors, np.array([1.0, model.layers * lora, float(offload)])


def scoring_features(job: Replay) -> np.ndarray:
    """Scoring = this . SCORING + the exposed communication (`exposed_comm_s`): (forward FLOPs
    time at peak over all GPUs, stretched by a pipeline's bubble; offloaded pass-layers;
    offloaded pass-GBs of weights; micro-batch-layers on each data-parallel rank; the PFLOPs of
    that compute)."""
    passes, model, layout = job.setup.scoring_passes(), job.model, job.row.layout()
    tokens, real = _tokens(job, training=False)  # each GPU's share: computed, real
    work = tokens * layout.stretch() * 2 * model.params
    micro = real * layout.micro_batch_layers_per_token(model.layers, train=False)
    offloaded = passes * layout.offload
    per_pass = [offloaded * model.layers, offloaded * model.weight_bytes / GB]
    return np.array([work / job.gpu.bf16_flops, *per_pass, micro, work / PFLOP])


def training_features(job: Replay) -> np.ndarray:
    """Training = this . TRAINING + the exposed communication: (update FLOPs time at peak over
    all GPUs, stretched by a pipeline's bubble, the forward twice with gradient checkpointing;
    offloaded update-layers; micro-batch-layers on each data-parallel rank; the PFLOPs of that
    compute)."""
    updates, model, layout = job.setup.training_passes(), job.model, job.row.layout()
    flops = train_flops_per_token(model, job.row.lora_rank > 0, layout.recompute)
    tokens, real = _tokens(job, training=True)
    work = tokens * layout.stretch() * flops
    micro = real * layout.micro_batch_layers_per_token(model.layers, train=True)
    offloaded = updates * layout.offload * model.layers
    return np.array([work / job.gpu.bf16_flops, offloaded, micro, work / PFLOP])


def compute_rate(c: Coefficients, phase: str) -> tuple[float, float]:
    """The phase's compute coefficients (COMPUTE_TERMS) in `c`."""
    at_peak, per_pflop = COMPUTE_TERMS[phase]
    return getattr(c, at_peak), getattr(c, per_pflop)


def exposed_comm_s(job: Replay, phase: str, at_peak: float, per_pflop: float) -> float:
    """Scoring's or training's exposed communication on each GPU, seconds that no coefficient
    scales: Megatron's collectives, or FSDP's gathers beyond the micro-batches' compute at the
    rate `at_peak` and `per_pflop` (the phase's COMPUTE_TERMS) give it."""
    model, layout, lora = job.model, job.row.layout(), job.row.lora_rank > 0
    training = phase == "training"
    flops = train_flops_per_token(model, lora, layout.recompute) if training else 2 * model.params
    compute = compute_s_per_flop(at_peak, per_pflop, job.gpu) * flops
    tokens, _ = _tokens(job, training)
    return tokens * comm_s_per_token(model, job.gpu, layout, compute, training, lora)


def _tokens(job: Replay, training: bool) -> tuple[float, float]:
    """Each GPU's share of the tokens the phase's passes compute on (padding included, as the
    simulator counts them) and of the real ones (which set the micro-batch count)."""
    setup, gpus = job.setup, job.row.n_gpus
    passes = setup.training_passes() if training else setup.scoring_passes()
    computed = float(setup.pass_tokens(job.batch, training).sum())
    return computed / gpus, passes * job.batch.sequence_tokens() / gpus


# Any positive coefficients give the same schedule; these make a valid counting profile.
_UNIT = Coefficients(**dict.fromkeys(GENERATION + SWITCH + SCORING + TRAINING, 1.0))
