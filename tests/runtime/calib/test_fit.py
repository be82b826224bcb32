"""The fit recovers a known step model from steps it simulated, and leave-one-run-out predicts a
held-out run from the others."""

from __future__ import annotations

import pytest

from rlguard.runtime.calib.coefficients import Coefficients
from rlguard.runtime.calib.fit import features, fit, host_factor, leave_one_run_out
from rlguard.runtime.calib.measured import PHASES
from rlguard.runtime.calib.replay import (
    COMPUTE_TERMS,
    GENERATION,
    SWITCH,
    compute_rate,
    exposed_comm_s,
    replay,
    scoring_features,
    simulate,
    training_features,
)
from synthetic_steps import RUNS, TRUTH, synthetic_rows


def test_the_fit_reproduces_the_steps_of_a_known_model() -> None:
    rows = synthetic_rows(TRUTH)
    fitted = fit(features(rows), [])
    for row in rows:
        simulated = simulate(replay(row), fitted)
        for phase in PHASES:
            assert simulated[phase] == pytest.approx(row.measured(phase), rel=0.02), (row, phase)
    assert fitted.forward == pytest.approx(TRUTH.forward, rel=1e-6)
    for name in (
        *GENERATION,  # each engine generation's terms apart, from runs of both
        *SWITCH,
        "offload_pass_s_per_layer",
        "offload_pass_s_per_gb",
        "offload_update_s_per_layer",
        "forward_s_per_pflop",
        "train_s_per_pflop",
    ):
        assert getattr(fitted, name) == pytest.approx(getattr(TRUTH, name), rel=1e-6), name
    assert fitted.micro_s_per_layer == pytest.approx(TRUTH.micro_s_per_layer, rel=1e-6)
    assert fitted.train_micro_s_per_layer == pytest.approx(TRUTH.train_micro_s_per_layer, rel=1e-6)


def _comm(coefs: Coefficients) -> dict[str, dict[str, float]]:
    return {
        f.row.run: {p: exposed_comm_s(f.job, p, *compute_rate(coefs, p)) for p in COMPUTE_TERMS}
        for f in features(synthetic_rows(TRUTH))
    }


def test_communication_over_pcie_is_in_the_steps_but_in_no_coefficient() -> None:
    comm = _comm(TRUTH)
    assert comm["run7"]["scoring"] > 0 and comm["run7"]["training"] > 0  # Megatron TP on PCIe
    assert comm["run4"]["training"] > 0  # FSDP gathers a one-sequence micro-batch cannot hide
    assert comm["run2"] == {"scoring": 0.0, "training": 0.0}  # NVLink: FSDP's gathers hidden


def test_fsdp_hides_more_behind_slower_compute_and_megatron_does_not() -> None:
    slower = TRUTH.model_copy(update={"train": 2 * TRUTH.train, "forward": 2 * TRUTH.forward})
    base, slow = _comm(TRUTH), _comm(slower)
    assert slow["run4"]["training"] < base["run4"]["training"]
    assert slow["run7"] == base["run7"]


def test_roofline_multipliers_stay_at_least_one() -> None:
    # steps faster than the datasheet allows: the fit holds the multipliers at the roofline
    rows = synthetic_rows(TRUTH.model_copy(update={"memory": 0.3, "forward": 0.5, "train": 0.5}))
    fitted = fit(features(rows), [])
    assert fitted.memory == 1.0 and fitted.forward == 1.0 and fitted.train == 1.0


def test_a_generation_out_of_the_domain_is_never_fitted_but_is_predicted() -> None:
    rows = synthetic_rows(TRUTH)
    slow = synthetic_rows(TRUTH.model_copy(update={"memory": 10.0, "train": 10.0}))
    reason = {"generation_out_of_domain": "an engine no other run has"}
    marked = [r.model_copy(update=reason) for r in slow]
    mixed = [r for r in rows if r.run != "run3"] + [r for r in marked if r.run == "run3"]
    fitted = fit(features(mixed), [])
    assert fitted.memory == pytest.approx(TRUTH.memory, rel=1e-6)  # its generation: not fitted
    assert fitted.train > 1.05 * TRUTH.train  # its training: fitted
    errors = {(e.run, e.phase): e.error for e in leave_one_run_out(features(mixed), [])}
    assert errors[("run3", "generation")] < -0.2  # predicted at TRUTH's speed, measured slower


def test_leave_one_run_out_predicts_the_held_out_run() -> None:
    errors = leave_one_run_out(features(synthetic_rows(TRUTH)), [])
    assert {e.run for e in errors} == {f"run{i}" for i in range(len(RUNS))}
    assert {e.phase for e in errors} == set(PHASES)
    assert max(abs(e.error) for e in errors) < 0.05


def test_a_step_model_that_is_not_the_one_measured_shows_in_the_errors() -> None:
    # measured with twice the eager launch overhead on one run: its held-out error grows
    rows = synthetic_rows(TRUTH)
    slow = synthetic_rows(TRUTH.model_copy(update={"eager_v0_s_per_layer": 2e-3}))
    mixed = [r for r in rows if r.run != "run3"] + [r for r in slow if r.run == "run3"]
    errors = {(e.run, e.phase): e.error for e in leave_one_run_out(features(mixed), [])}
    assert errors[("run3", "generation")] < -0.1


def test_gradient_checkpointing_adds_a_forward_to_the_update_only() -> None:
    # the same run with and without recompute: training's compute grows by 8/6 (LoRA: 6/4),
    # scoring and generation do not move
    for lora in (0, 32):
        row = synthetic_rows(TRUTH)[4].model_copy(update={"lora_rank": lora})
        plain, recomputed = (
            replay(row),
            replay(row.model_copy(update={"gradient_checkpointing": True})),
        )
        base = 4 if lora else 6
        assert training_features(recomputed)[0] == pytest.approx(
            training_features(plain)[0] * (base + 2) / base
        )
        assert scoring_features(recomputed).tolist() == scoring_features(plain).tolist()
        sim_plain, sim_re = simulate(plain, TRUTH), simulate(recomputed, TRUTH)
        assert sim_re["training"] > sim_plain["training"]
        assert sim_re["scoring"] == sim_plain["scoring"]


def test_smaller_micro_batches_cost_more_per_token_and_the_fit_sees_it() -> None:
    # halving the micro-batch doubles the micro-batch overhead and nothing else
    row = synthetic_rows(TRUTH)[5]
    small = replay(row.model_copy(update={"micro_batch_per_gpu": row.micro_batch_per_gpu // 2}))
    big = replay(row)
    assert training_features(small)[2] == pytest.approx(2 * training_features(big)[2])
    assert training_features(small)[0] == pytest.approx(training_features(big)[0])
    assert simulate(small, TRUTH)["training"] > simulate(big, TRUTH)["training"]


def test_a_held_out_run_is_never_fitted_and_is_predicted_by_the_fit_to_the_rest() -> None:
    rows = synthetic_rows(TRUTH)
    slow = synthetic_rows(TRUTH.model_copy(update={"train": 10.0}))
    held = [r.model_copy(update={"held_out": True}) for r in slow if r.run == "run2"]
    mixed = [r for r in rows if r.run != "run2"] + held
    assert fit(features(mixed), []).train == pytest.approx(TRUTH.train, rel=1e-6)
    errors = {(e.run, e.phase): e.error for e in leave_one_run_out(features(mixed), [])}
    assert errors[("run2", "training")] < -0.3  # predicted at TRUTH's speed, measured slower
    assert abs(errors[("run0", "training")]) < 0.05


@pytest.mark.parametrize("slower", [0.5, 1.6])
def test_a_runs_host_factor_is_how_much_slower_its_host_did_the_per_op_work(slower) -> None:
    """Steps simulated with every per-op term `slower` times the model's give back that factor
    from the model; the model's own steps give 1."""
    for run in ("run1", "run4"):  # LoRA GRPO on V0; PPO with a critic on V1
        jobs = [replay(r) for r in synthetic_rows(TRUTH.at_host_speed(slower)) if r.run == run]
        assert host_factor(run, jobs, TRUTH) == pytest.approx(slower, rel=1e-3)
        own = [replay(r) for r in synthetic_rows(TRUTH) if r.run == run]
        assert host_factor(run, own, TRUTH) == pytest.approx(1, rel=1e-3)


def test_steps_that_time_no_phase_have_no_host_factor() -> None:
    untimed = ("gen_s", "old_log_prob_s", "ref_s", "values_s", "update_actor_s", "update_critic_s")
    rows = [r for r in synthetic_rows(TRUTH) if r.run == "run4"]
    jobs = [replay(r.model_copy(update=dict.fromkeys(untimed))) for r in rows]
    assert host_factor("run4", jobs, TRUTH) is None
