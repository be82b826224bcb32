"""measure_profile: a valid TimeProfile from the runtime's own code paths, saved as a file."""

from __future__ import annotations

import pytest

from rlguard.runtime.generation import profiling
from rlguard.runtime.generation.profiling import (
    ProfileSettings,
    fit_step_time,
    measure_profile,
    save_measured_profile,
)
from rlguard.runtime.policies.profiles import load_profile

SMALL = ProfileSettings(
    prompt_tokens=16,
    context_tokens=16,
    batch_sizes=(1, 3),
    decode_steps=2,
    sequence_tokens=16,
    sequences=2,
    repeats=1,
)


def test_the_line_fit_recovers_an_exact_line_and_never_goes_negative() -> None:
    line = [0.01 + 0.002 * b for b in (1, 2, 4, 8)]
    assert fit_step_time([1, 2, 4, 8], line) == pytest.approx((0.01, 0.002))
    a, b = fit_step_time([1, 2, 4], [0.5, 0.3, 0.1])  # falling: the best non-negative line is flat
    assert b == 0.0 and a == pytest.approx(0.3)


def test_a_measured_profile_is_valid_and_round_trips_through_its_file(model, tmp_path) -> None:
    model.train()
    grads_before = [p.grad for p in model.parameters()]
    profile = measure_profile(model, "tiny-cpu", cold_start_s=1.5, max_batch=8, settings=SMALL)
    assert model.training  # mode restored
    assert [p.grad for p in model.parameters()] == grads_before  # no gradients left behind
    model.eval()
    assert profile.name == "tiny-cpu" and profile.cold_start_s == 1.5
    assert profile.max_batch == 8 and profile.gpus_per_actor == 1
    per_token = [profile.prefill_s_per_token, profile.score_s_per_token, profile.train_s_per_token]
    assert all(t > 0 for t in per_token)
    # under load a batch-3 step can time slower than three batch-1 steps: the fitted line then
    # runs through the origin (no intercept), which is a valid profile as long as a step costs
    assert profile.decode_s_per_step >= 0 and profile.decode_s_per_seq >= 0
    assert profile.decode_step_s(1) > 0
    path = tmp_path / "tiny-cpu.yaml"
    save_measured_profile(profile, path, SMALL, model)
    assert load_profile(path) == profile
    assert "least-squares" in path.read_text()


def test_times_are_normalised_per_token_and_per_step(model, monkeypatch) -> None:
    """With every timed call taking exactly one (fake) second, the profile shows the divisors."""

    def one_second(run, device) -> float:
        run()
        return 1.0

    monkeypatch.setattr(profiling, "seconds", one_second)
    profile = measure_profile(model, "fake", cold_start_s=0.0, settings=SMALL)
    assert profile.prefill_s_per_token == 1 / SMALL.prompt_tokens
    assert profile.score_s_per_token == profile.train_s_per_token == 1 / (16 * 2)
    assert (profile.decode_s_per_step, profile.decode_s_per_seq) == pytest.approx((1.0, 0.0))


def test_a_line_through_the_origin_still_makes_a_valid_profile(model, monkeypatch) -> None:
    """The flake seen under load: a slow batch-3 step pulled the intercept to 0."""
    monkeypatch.setattr(profiling, "decode_step_seconds", lambda model, b, settings: 0.01 * b**2)
    profile = measure_profile(model, "loaded", cold_start_s=0.0, settings=SMALL)
    assert profile.decode_s_per_step == 0.0 and profile.decode_s_per_seq > 0


def test_one_batch_size_cannot_fit_a_line() -> None:
    with pytest.raises(ValueError, match="two batch sizes"):
        ProfileSettings(batch_sizes=(4, 4))
