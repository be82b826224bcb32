"""The fit recovers a known step model from steps it simulated, and leave-one-run-out predicts a
held-out run from the others."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.coefficients import Coefficients
from rlguard.runtime.calib.fit import features, fit, leave_one_run_out
from rlguard.runtime.calib.measured import PHASES, MeasuredStep
from rlguard.runtime.calib.replay import (
    replay,
    scoring_features,
    simulate,
    training_features,
)

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


def _rows(coefs: Coefficients) -> list[MeasuredStep]:
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


def test_the_fit_reproduces_the_steps_of_a_known_model() -> None:
    rows = _rows(TRUTH)
    fitted = fit(features(rows))
    for row in rows:
        simulated = simulate(replay(row), fitted)
        for phase in PHASES:
            assert simulated[phase] == pytest.approx(row.measured(phase), rel=0.02), (row, phase)
    assert fitted.forward == pytest.approx(TRUTH.forward, rel=1e-6)
    for name in (
        "offload_pass_s_per_layer",
        "offload_pass_s_per_gb",
        "offload_update_s_per_layer",
        "forward_s_per_pflop",
        "train_s_per_pflop",
    ):
        assert getattr(fitted, name) == pytest.approx(getattr(TRUTH, name), rel=1e-6), name
    assert fitted.micro_s_per_layer == pytest.approx(TRUTH.micro_s_per_layer, rel=1e-6)
    assert fitted.train_micro_s_per_layer == pytest.approx(TRUTH.train_micro_s_per_layer, rel=1e-6)


def test_communication_over_pcie_is_in_the_steps_but_in_no_coefficient() -> None:
    comm = {f.row.run: f.comm for f in features(_rows(TRUTH))}
    assert comm["run7"]["scoring"] > 0 and comm["run7"]["training"] > 0  # Megatron TP on PCIe
    assert comm["run4"]["training"] > 0  # FSDP gathers a one-sequence micro-batch cannot hide
    assert comm["run2"] == {"scoring": 0.0, "training": 0.0}  # NVLink: FSDP's gathers hidden


def test_roofline_multipliers_stay_at_least_one() -> None:
    # steps faster than the datasheet allows: the fit holds the multipliers at the roofline
    rows = _rows(TRUTH.model_copy(update={"memory": 0.3, "forward": 0.5, "train": 0.5}))
    fitted = fit(features(rows))
    assert fitted.memory == 1.0 and fitted.forward == 1.0 and fitted.train == 1.0


def test_a_generation_out_of_the_domain_is_never_fitted_but_is_predicted() -> None:
    rows = _rows(TRUTH)
    slow = _rows(TRUTH.model_copy(update={"memory": 5.0, "train": 10.0}))
    reason = {"generation_out_of_domain": "an engine no other run has"}
    marked = [r.model_copy(update=reason) for r in slow]
    mixed = [r for r in rows if r.run != "run3"] + [r for r in marked if r.run == "run3"]
    fitted = fit(features(mixed))
    assert fitted.memory == pytest.approx(TRUTH.memory, rel=1e-6)  # its generation: not fitted
    assert fitted.train > 1.05 * TRUTH.train  # its training: fitted
    errors = {(e.run, e.phase): e.error for e in leave_one_run_out(features(mixed))}
    assert errors[("run3", "generation")] < -0.2  # predicted at TRUTH's speed, measured slower


def test_leave_one_run_out_predicts_the_held_out_run() -> None:
    errors = leave_one_run_out(features(_rows(TRUTH)))
    assert {e.run for e in errors} == {f"run{i}" for i in range(len(RUNS))}
    assert {e.phase for e in errors} == set(PHASES)
    assert max(abs(e.error) for e in errors) < 0.05


def test_a_step_model_that_is_not_the_one_measured_shows_in_the_errors() -> None:
    # measured with twice the eager launch overhead on one run: its held-out error grows
    rows = _rows(TRUTH)
    slow = _rows(TRUTH.model_copy(update={"eager_s_per_layer": 1e-3}))
    mixed = [r for r in rows if r.run != "run3"] + [r for r in slow if r.run == "run3"]
    errors = {(e.run, e.phase): e.error for e in leave_one_run_out(features(mixed))}
    assert errors[("run3", "generation")] < -0.1


def test_gradient_checkpointing_adds_a_forward_to_the_update_only() -> None:
    # the same run with and without recompute: training's compute grows by 8/6 (LoRA: 6/4),
    # scoring and generation do not move
    for lora in (0, 32):
        row = _rows(TRUTH)[4].model_copy(update={"lora_rank": lora})
        plain, recomputed = (
            replay(row),
            replay(row.model_copy(update={"gradient_checkpointing": True})),
        )
        base = 4 if lora else 6
        assert training_features(recomputed)[0][0] == pytest.approx(
            training_features(plain)[0][0] * (base + 2) / base
        )
        assert scoring_features(recomputed)[0].tolist() == scoring_features(plain)[0].tolist()
        sim_plain, sim_re = simulate(plain, TRUTH), simulate(recomputed, TRUTH)
        assert sim_re["training"] > sim_plain["training"]
        assert sim_re["scoring"] == sim_plain["scoring"]


def test_smaller_micro_batches_cost_more_per_token_and_the_fit_sees_it() -> None:
    # halving the micro-batch doubles the micro-batch overhead and nothing else
    row = _rows(TRUTH)[5]
    small = replay(row.model_copy(update={"micro_batch_per_gpu": row.micro_batch_per_gpu // 2}))
    big = replay(row)
    assert training_features(small)[0][2] == pytest.approx(2 * training_features(big)[0][2])
    assert training_features(small)[0][0] == pytest.approx(training_features(big)[0][0])
    assert simulate(small, TRUTH)["training"] > simulate(big, TRUTH)["training"]


def test_a_held_out_run_is_never_fitted_and_is_predicted_by_the_fit_to_the_rest() -> None:
    rows = _rows(TRUTH)
    slow = _rows(TRUTH.model_copy(update={"train": 10.0}))
    held = [r.model_copy(update={"held_out": True}) for r in slow if r.run == "run2"]
    mixed = [r for r in rows if r.run != "run2"] + held
    assert fit(features(mixed)).train == pytest.approx(TRUTH.train, rel=1e-6)
    errors = {(e.run, e.phase): e.error for e in leave_one_run_out(features(mixed))}
    assert errors[("run2", "training")] < -0.3  # predicted at TRUTH's speed, measured slower
    assert abs(errors[("run0", "training")]) < 0.05
