"""Steps simulated by a known step model over eight runs of every layout the model tells apart:
what a fit must recover (tests/runtime/calib)."""

from __future__ import annotations

from rlguard.runtime.calib.coefficients import Coefficients
from rlguard.runtime.calib.measured import MeasuredStep
from rlguard.runtime.calib.replay import replay, simulate

TRUTH = Coefficients(
    memory=1.4,
    generation_compute=2.0,
    host_v0_s_per_seq=5e-5,
    host_v1_s_per_seq=3e-5,
    eager_v0_s_per_layer=4e-4,
    eager_v1_s_per_layer=1e-4,
    lora_s_per_seq_layer=5e-6,
    switch_s=3.0,
    switch_lora_s_per_layer=0.1,
    switch_offload_s=2.0,
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
# (model, gpu, GPUs, rollout TP, prompts, samples, mean response, clip ratio, critic, LoRA rank,
# vLLM engine)
RUNS = [
    ("qwen2.5-0.5b", "a100", 2, 1, 32, 4, 150.0, 0.0, False, 0, "v1"),
    ("qwen2.5-3b", "h100", 4, 1, 48, 4, 300.0, 0.01, False, 32, "v0"),
    ("qwen2.5-7b", "h100", 8, 2, 64, 5, 230.0, 0.002, True, 0, "v1"),
    ("qwen2.5-14b", "h20", 8, 4, 32, 8, 600.0, 0.05, False, 0, "v0"),
    ("qwen2.5-1.5b", "l40s", 4, 1, 64, 4, 400.0, 0.02, True, 0, "v1"),
    ("deepseek-llm-7b", "a100", 8, 2, 32, 4, 250.0, 0.0, False, 16, "v0"),
    ("qwen2.5-32b", "h100", 8, 8, 64, 5, 250.0, 0.0, False, 32, "v1"),
    ("qwen2-7b", "l20", 16, 2, 64, 5, 260.0, 0.02, False, 0, "v0"),
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
    for i, (model, gpu, n, tp, prompts, k, mean, clip, critic, lora, engine) in enumerate(RUNS):
        for step in (2, 3):
            row = MeasuredStep(
                run=f"run{i}",
                step=step,
                source="synthetic",
                model=model,
                gpu=gpu,
                n_gpus=n,
                rollout_tp=tp,
                vllm_engine=engine,
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
