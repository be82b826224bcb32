"""Steps simulated by a known step model over eight runs of every layout the model tells apart:
what a fit must recover (tests/runtime/calib)."""

from __future__ import annotations

from rlguard.runtime.calib.coefficients import Coefficients
from rlguard.runtime.calib.measured import MeasuredStep
from rlguard.runtime.calib.replay import replay, simulate

TRUTH = Coefficients(
    memory=1.4,
    eager_s_per_layer=2e-4,
    lora_s_per_seq_layer=5e-6,
    prefill=2.0,
    switch_s=3.0,
    switch_s_per_gb=0.4,
    forward=3.0,
    offload_pass_s_per_layer=0.05,
    offload_pass_s_per_gb=0.02,
    train=3.5,
    offload_update_s_per_layer=0.1,
    micro_s_per_layer=2e-3,
    train_micro_s_per_layer=6e-3,
    forward_s_per_pflop=0.3,
    train_s_per_pflop=0.4,
)
# (model, gpu, GPUs, rollout TP, prompts, samples, mean response, clip ratio, critic, LoRA rank)
RUNS = [
    ("qwen2.5-0.5b", "a100", 2, 1, 32, 4, 150.0, 0.0, False, 0),
    ("qwen2.5-3b", "h100", 4, 1, 48, 4, 300.0, 0.01, False, 32),
    ("qwen2.5-7b", "h100", 8, 2, 64, 5, 230.0, 0.002, True, 0),
    ("qwen2.5-14b", "h20", 8, 4, 32, 8, 600.0, 0.05, False, 0),
    ("qwen2.5-1.5b", "l40s", 4, 1, 64, 4, 400.0, 0.02, True, 0),
    ("deepseek-llm-7b", "a100", 8, 2, 32, 4, 250.0, 0.0, False, 16),
    ("qwen2.5-32b", "h100", 8, 8, 64, 5, 250.0, 0.0, False, 32),
    ("qwen2-7b", "l20", 16, 2, 64, 5, 260.0, 0.02, False, 0),
]
# trainer layouts other than the default FSDP: Megatron over PCIe, FSDP exposed over PCIe,
# parameters offloaded
TRAINERS = {
    7: {"actor_strategy": "megatron", "train_tp": 4, "train_pp": 2, "train_vpp": 2},
    4: {"micro_batch_per_gpu": 1},
    1: {"micro_batch_per_gpu": 8, "gradient_checkpointing": True, "param_offload": True},
    3: {"micro_batch_per_gpu": 4, "log_prob_micro_batch_per_gpu": 16},
    5: {"param_offload": True},
    6: {"param_offload": True},
}


def synthetic_rows(coefs: Coefficients) -> list[MeasuredStep]:
    rows = []
    for i, (model, gpu, n, tp, prompts, k, mean, clip, critic, lora) in enumerate(RUNS):
        for step in (2, 3):
            row = MeasuredStep(
                run=f"run{i}",
                step=step,
                source="synthetic",
                model=model,
                gpu=gpu,
                n_gpus=n,
                rollout_tp=tp,
                algorithm="ppo" if critic else "grpo",
                prompts_per_step=prompts,
                n_samples=k,
                max_prompt_length=512,
                max_response_length=1024,
                prompt_length_mean=120.0,
                response_length_mean=mean * (1 + 0.1 * step),
                response_length_max=1024.0 if clip else mean * 3,
                response_clip_ratio=clip,
                lora_rank=lora,
                ref_s=1.0,  # a reference model scores: its time is set below
                **TRAINERS.get(i, {}),
            )
            phases = simulate(replay(row), coefs)
            third = 3 if critic else 2
            rows.append(
                row.model_copy(
                    update={
                        "gen_s": phases["generation"],
                        "old_log_prob_s": phases["scoring"] / third,
                        "ref_s": phases["scoring"] / third,
                        "values_s": phases["scoring"] / third if critic else None,
                        "update_actor_s": phases["training"] / (1 + critic),
                        "update_critic_s": phases["training"] / 2 if critic else None,
                    }
                )
            )
    return rows
