"""The trainer's communication, hand-computed on a toy model and GPU: ring volumes, Megatron's
tensor-parallel all-reduces, its pipeline bubble and optimizer sync, and FSDP's gathers hidden
behind compute."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.comm import (
    TrainerSettings,
    TrainLayout,
    comm_s_per_token,
    pipeline_stretch,
    ring_all_gather_s,
    ring_all_reduce_s,
)
from rlguard.runtime.sim.hardware import GPUS, GpuSpec, ModelSpec

# 1e9 params (2 GB of bf16 weights), 2 layers, hidden 1000; links of 1 GB/s, 1 TFLOPS.
TOY = ModelSpec("toy", 1e9, 2, 1, 64, 1000, 1000)
LINK = GpuSpec("toy", 80e9, 1e12, 1e12, 1e9)


def layout(strategy: str, n: int, tp: int = 1, pp: int = 1, **kw: int) -> TrainLayout:
    """Micro-batches of 2 sequences of 500 tokens (1,000 tokens), 16 sequences a step and an
    optimizer step."""
    mini = kw.get("mini", 16)
    return TrainLayout(strategy, n, tp, pp, kw.get("vpp", 1), 2, mini, mini, 500.0)


def test_ring_collectives_move_their_textbook_volume() -> None:
    # all-reduce 2(n-1)/n x S, all-gather (n-1)/n x S; one GPU moves nothing
    assert ring_all_reduce_s(1e9, 4, 32e9) == pytest.approx(2 * 3 / 4 / 32)
    assert ring_all_gather_s(1e9, 4, 32e9) == pytest.approx(3 / 4 / 32)
    assert ring_all_reduce_s(1e9, 1, 32e9) == 0.0


def test_megatron_tp_all_reduces_two_per_layer_forward_and_two_backward() -> None:
    # one all-reduce of 2 x 1000 B over 2 GPUs: 2 x 1/2 x 2000 / 1e9 = 2 us, holding 2 GPUs
    score = comm_s_per_token(TOY, LINK, layout("megatron", 2, tp=2), 0.0, False, False)
    assert score == pytest.approx(2 * 2 * 2 * 2e-6)  # layers x all-reduces x GPUs x time
    update = comm_s_per_token(TOY, LINK, layout("megatron", 2, tp=2), 0.0, True, True)
    assert update == pytest.approx(2 * 4 * 2 * 2e-6)  # LoRA: no optimizer sync


def test_the_pipeline_bubble_stretches_by_the_idle_share() -> None:
    # p = 2 stages, m = 2 micro-batches: idle 1/3 of the time, 3/2 the work
    assert pipeline_stretch(2, 1, 2) == pytest.approx(1.5)
    assert pipeline_stretch(4, 2, 3) == pytest.approx((2 * 3 + 3) / (2 * 3))
    assert pipeline_stretch(1, 1, 1) == 1.0
    # 8 GPUs, TP 2 x PP 2: 2 replicas; 16 sequences / 2 replicas / 2 a micro-batch = 4
    assert layout("megatron", 8, tp=2, pp=2).stretch() == pytest.approx(5 / 4)
    assert layout("fsdp", 8).stretch() == 1.0


def test_megatron_syncs_its_sharded_optimizer_once_a_step() -> None:
    # share 1e9 / (2 x 2); over 2 replicas: fp32 gradients 1/2 x 1e9 B, bf16 weights 1/2 x 5e8 B
    sync = 0.5 + 0.25
    per_token = sync * 8 / (16 * 500)  # 8 GPUs held, 16 sequences of 500 tokens a step
    tp = 2 * 4 * 2 * 2e-6 * 5 / 4  # the TP all-reduces, stretched by the bubble
    got = comm_s_per_token(TOY, LINK, layout("megatron", 8, tp=2, pp=2), 0.0, True, False)
    assert got == pytest.approx(tp + per_token)


def test_fsdp_shows_only_the_gather_its_compute_does_not_hide() -> None:
    # 4 GPUs gather 3/4 x 2 GB at 1 GB/s: 1.5 s a micro-batch of 1,000 tokens
    fsdp = layout("fsdp", 4)
    assert comm_s_per_token(TOY, LINK, fsdp, 0.0, False, False) == pytest.approx(1.5e-3)
    # 1 ms of compute a token: the micro-batch's 1 s hides 1 s of it
    assert comm_s_per_token(TOY, LINK, fsdp, 1e-3, False, False) == pytest.approx(0.5e-3)
    # an update gathers twice and reduce-scatters fp32 gradients: 1.5 + 1.5 + 3/4 x 4 = 6 s
    assert comm_s_per_token(TOY, LINK, fsdp, 5e-3, True, False) == pytest.approx(1e-3)
    assert comm_s_per_token(TOY, LINK, fsdp, 6e-3, True, False) == 0.0
    assert comm_s_per_token(TOY, LINK, fsdp, 2e-3, True, True) == pytest.approx(1e-3)  # LoRA
    assert comm_s_per_token(TOY, LINK, layout("fsdp", 1), 0.0, True, False) == 0.0


def test_settings_make_a_layout_of_the_step() -> None:
    megatron = TrainerSettings(strategy="megatron", tp=4, pp=2, vpp=2, micro_batch_per_gpu=4)
    got = megatron.layout(16, prompts=1024, samples=5, tokens=360.0)
    assert (got.strategy, got.dp, got.mini_batch, got.micro_batch) == ("megatron", 2, 1280, 4)
    assert TrainerSettings(strategy="fsdp2").layout(8, 64, 5, 300.0).mini_batch == 64 * 5
    with pytest.raises(ValueError, match="does not divide 6 GPUs"):
        megatron.check(6)


def test_pcie_gpus_have_no_nvlink() -> None:
    # what NCCL's all-reduce measures over PCIe Gen4 with P2P, below the link's 32 GB/s
    assert GPUS["l20"].interconnect == GPUS["l40s"].interconnect == 22e9
    # a GeForce card has no peer-to-peer: NCCL goes through host memory, slower still
    assert GPUS["rtx4090"].interconnect == 18e9
    pcie = ("l20", "l40s", "rtx4090")
    assert min(g.interconnect for k, g in GPUS.items() if k not in pcie) >= 200e9


def test_a_token_pays_its_share_of_each_micro_batch_on_every_layer() -> None:
    # FSDP over 4 GPUs, micro-batches of 2 sequences of 500 tokens: a token is 1/1000 of a
    # micro-batch that runs through the 2 layers on one GPU
    fsdp = layout("fsdp", 4)
    assert fsdp.micro_batch_layers_per_token(2, train=True) == pytest.approx(2 / 1000)
    # twice the sequence length or twice the micro-batch: half the overhead a token
    longer = TrainLayout("fsdp", 4, 1, 1, 1, 2, 16, 16, 1000.0)
    bigger = TrainLayout("fsdp", 4, 1, 1, 1, 4, 16, 16, 500.0)
    for other in (longer, bigger):
        assert other.micro_batch_layers_per_token(2, True) == pytest.approx(1 / 1000)
    # Megatron TP 2: each micro-batch holds 2 GPUs; PP 2: its stages run their halves at once
    assert layout("megatron", 2, tp=2).micro_batch_layers_per_token(2, True) == pytest.approx(
        2 * 2 / 1000
    )
    piped = layout("megatron", 8, tp=2, pp=2)  # 4 micro-batches a replica: bubble 5/4
    assert piped.micro_batch_layers_per_token(2, True) == pytest.approx(2 * 2 / 1000 * 5 / 4)


def test_an_optimizer_step_runs_whole_micro_batches_on_each_rank() -> None:
    # 4 ranks, 4 sequences a step: a rank's share of 1 sequence still runs one micro-batch
    # (of 1, not 2), so a token pays twice the micro-batch overhead and FSDP's gathers hide
    # behind half the compute
    small = layout("fsdp", 4, mini=4)
    assert small.micro_batch_sequences(train=True) == 1
    assert small.micro_batch_layers_per_token(2, train=True) == pytest.approx(2 / 500)
    assert comm_s_per_token(TOY, LINK, small, 5e-3, True, False) == pytest.approx(3.5e-3 / 0.5)
    # a share of 3 in micro-batches of at most 2: two of 1.5 sequences
    assert layout("fsdp", 4, mini=12).micro_batch_sequences(train=True) == pytest.approx(1.5)
    # scoring splits each rank's share of the whole step: 32 sequences, 8 a rank, 4 of 2;
    # 4 sequences, 1 a rank: one micro-batch of 1
    step = TrainLayout("fsdp", 4, 1, 1, 1, 2, 4, 32, 500.0)
    assert step.micro_batch_sequences(train=False) == 2
    assert small.micro_batch_sequences(train=False) == 1


def test_scoring_uses_the_log_prob_micro_batch_and_training_its_own() -> None:
    split = TrainLayout("fsdp", 4, 1, 1, 1, 2, 16, 32, 500.0, log_prob_micro_batch=8)
    assert split.micro_batch_layers_per_token(2, train=False) == pytest.approx(2 / 4000)
    assert split.micro_batch_layers_per_token(2, train=True) == pytest.approx(2 / 1000)
    # FSDP's gathers hide behind a log-prob micro-batch 4x the training one: 4x the compute
    fsdp = TrainLayout("fsdp", 4, 1, 1, 1, 2, 16, 32, 500.0, log_prob_micro_batch=8)
    assert comm_s_per_token(TOY, LINK, fsdp, 0.0, False, False) == pytest.approx(1.5e-3 / 4)
    settings = TrainerSettings(micro_batch_per_gpu=2, log_prob_micro_batch_per_gpu=8)
    assert settings.layout(4, 16, 1, 500.0).score_micro_batch == 8
    assert TrainerSettings(micro_batch_per_gpu=2).layout(4, 16, 1, 500.0).score_micro_batch == 2


def test_gradient_checkpointing_reaches_the_layout() -> None:
    settings = TrainerSettings(gradient_checkpointing=True)
    assert settings.layout(8, 64, 5, 300.0).recompute
    assert not TrainerSettings().layout(8, 64, 5, 300.0).recompute
