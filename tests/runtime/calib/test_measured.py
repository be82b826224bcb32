"""The shipped measurements carry each run's trainer layout as its config logged it, and a layout
that cannot split the GPUs fails in one line naming the file and line."""

from __future__ import annotations

import pytest

from rlguard.errors import InputError
from rlguard.runtime.calib.measured import SHIPPED, by_run, read_measured


def test_the_shipped_runs_carry_their_logged_trainer_layout() -> None:
    runs = {run: steps[0] for run, steps in by_run(read_measured()).items()}
    megatron = runs["qwen2-7b_math_megatron"].layout()
    # actor TP4 PP2 VPP2 on 16 L20; 4 sequences a micro-batch, 256 prompts x 5 a mini-batch
    assert (megatron.strategy, megatron.tp, megatron.pp, megatron.vpp) == ("megatron", 4, 2, 2)
    assert (megatron.dp, megatron.micro_batch, megatron.mini_batch) == (2, 4, 1280)
    assert megatron.stretch() == pytest.approx((2 * 160 + 1) / (2 * 160))  # 160 micro-batches
    fsdp2 = runs["qwen2-7b-fsdp2"].layout()
    assert (fsdp2.strategy, fsdp2.dp, fsdp2.micro_batch, fsdp2.mini_batch) == ("fsdp", 8, 40, 1280)
    for run, row in runs.items():
        if row.lora_rank:  # ppo_micro_batch_size 64 over the GPUs, one 64-prompt mini-batch
            assert (row.micro_batch_per_gpu, row.layout().mini_batch) == (64 // row.n_gpus, 320)
            assert (row.train_tp, row.train_pp, row.layout().dp) == (1, 1, row.n_gpus), run


def test_a_layout_that_does_not_split_the_gpus_is_one_line(tmp_path) -> None:
    shipped = SHIPPED.read_text("utf-8").splitlines()
    header, row = shipped[0], next(line for line in shipped if ",megatron,4,2,2," in line)
    bad = tmp_path / "steps.csv"  # TP 3 x PP 2 on 16 GPUs
    bad.write_text(header + "\n" + row.replace(",megatron,4,2,2,", ",megatron,3,2,2,") + "\n")
    with pytest.raises(InputError, match=r"steps.csv:2: trainer tp x pp = 6 does not divide 16"):
        read_measured(bad)


def test_the_shipped_runs_carry_recompute_and_the_held_out_set() -> None:
    runs = {run: steps[0] for run, steps in by_run(read_measured()).items()}
    for run, row in runs.items():
        # LoRA scripts, play-verl's tuning scripts, the dstack and Agentic-RAG runs enable
        # gradient checkpointing; the FSDP2 run disables it; Megatron's logged TransformerConfig
        # has recompute_granularity=None whatever the flag says; the TinyZero 4090 run enables
        # it for the critic alone, and the row's flag is the actor's
        enabled = (
            "dingxianzhong/play-verl@",
            "Bihan/dstack-configs@",
            "chenyiqun/Agentic-RAG@",
            "houkawa2/CodeGenerate_RL_Pipeline@",
        )
        expected = bool(row.lora_rank) or row.source.startswith(enabled)
        assert row.gradient_checkpointing is expected, run
    held = {run for run, row in runs.items() if row.held_out}
    # sessions 20's and 21's blind runs, and session 22's thirteen LoRA runs of verl-data that
    # no fit had used (the five held out before them had been seen and joined the fit)
    blind = {"houkawa2_qwen2.5_1.5b_ppo_1gpu", "tinyzero_westwood_qwen2.5_0.5b_ppo_rtx4090"}
    verl_data = held - blind
    assert blind <= held and len(verl_data) == 13
    for run in verl_data:
        row = runs[run]
        assert row.source.startswith("eric-haibin-lin/verl-data@") and row.lora_rank == 32, run
        assert "held out in session 22" in row.notes, run
    deepseek = runs["deepseek7b_llm_math_megatron"]
    assert deepseek.source.startswith("eric-haibin-lin/verl-data@40f7ce6cd7:gsm8k/")
    layout = deepseek.layout()
    assert (layout.tp, layout.pp, layout.vpp, layout.dp, layout.micro_batch) == (4, 2, 1, 2, 4)
