"""Time profiles and price tables: shipped defaults load, bad files fail in one line naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlguard.errors import InputError
from rlguard.runtime.policies.pricing import Prices, load_prices
from rlguard.runtime.policies.profiles import (
    TimeProfile,
    load_profile,
    save_profile,
    shipped_profile_files,
    shipped_profiles,
)

GOOD = {
    "name": "tiny",
    "prefill_s_per_token": 1e-4,
    "decode_s_per_step": 0.02,
    "decode_s_per_seq": 1e-4,
    "score_s_per_token": 1e-4,
    "train_s_per_token": 4e-4,
    "cold_start_s": 30.0,
    "max_batch": 64,
    "gpus_per_actor": 1,
}


def write(tmp_path: Path, fields: dict, name: str = "p.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(fields) if name.endswith(".json") else yaml.safe_dump(fields))
    return path


def test_every_shipped_profile_loads_and_documents_every_number() -> None:
    names = shipped_profiles()
    assert {"qwen2.5-7b-l40s", "qwen2.5-32b-l40s", "llama3.1-70b-h100"} <= set(names)
    for name in names:
        profile = load_profile(name)
        assert profile.name == name
        raw = yaml.safe_load(shipped_profile_files()[name].read_text())
        timing = set(TimeProfile.__dataclass_fields__) - {"name"}
        assert timing <= set(raw["derivation"]), name


def test_seventy_b_profiles_are_tensor_parallel() -> None:
    assert load_profile("llama3.1-70b-h100").gpus_per_actor > 1
    assert load_profile("qwen2.5-7b-l40s").gpus_per_actor == 1


def test_decode_step_time_grows_with_the_batch() -> None:
    p = TimeProfile(**GOOD)
    assert p.decode_step_s(0) == pytest.approx(0.02)
    assert p.decode_step_s(10) == pytest.approx(0.02 + 10 * 1e-4)


def test_decode_step_time_grows_with_context_and_never_beats_the_compute_floor() -> None:
    p = TimeProfile(**GOOD, decode_s_per_context_token=1e-6, decode_compute_s_per_seq=5e-4)
    assert p.decode_step_s(10, 1000) == pytest.approx(0.02 + 10 * 1e-4 + 1000 * 1e-6)
    assert p.decode_step_s(10, 5000) > p.decode_step_s(10, 1000)
    assert p.decode_step_s(100, 0) == pytest.approx(100 * 5e-4)  # matmul-bound


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 300),
    st.integers(0, 50_000),
    st.integers(0, 400),
    st.floats(0, 1e-5),
    st.floats(0, 1e-3),
)
@example(27, 0, 1, 2.2250738585e-313, 9e-4)  # a subnormal KV term once overflowed the step count
def test_closed_form_of_consecutive_steps_is_their_sum(batch, context, steps, per_ctx, floor):
    p = TimeProfile(**GOOD, decode_s_per_context_token=per_ctx, decode_compute_s_per_seq=floor)
    by_step = sum(p.decode_step_s(batch, context + batch * j) for j in range(steps))
    assert p.decode_steps_s(batch, context, steps) == pytest.approx(by_step, rel=1e-9, abs=1e-12)


def test_profile_file_round_trip(tmp_path: Path) -> None:
    profile = TimeProfile(**GOOD)
    save_profile(profile, tmp_path / "m.yaml", derivation={"max_batch": "measured"})
    assert load_profile(tmp_path / "m.yaml") == profile
    assert load_profile(write(tmp_path, GOOD, "p.json")) == profile


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"max_batch": 0}, "max_batch"),
        ({"decode_s_per_step": -0.1}, "decode_s_per_step"),
        ({"train_s_per_token": -1}, "train_s_per_token"),
        ({"gpus_per_actor": 0}, "gpus_per_actor"),
        ({"cold_start_s": "soon"}, "cold_start_s"),
        ({"typo_field": 1}, "typo_field"),
    ],
)
def test_inconsistent_profile_names_file_field_and_value(tmp_path: Path, change, field) -> None:
    path = write(tmp_path, {**GOOD, **change})
    with pytest.raises(InputError) as info:
        load_profile(path)
    message = str(info.value)
    assert str(path) in message and f"'{field}'" in message
    assert "\n" not in message


def test_a_profile_whose_decode_step_is_free_is_inconsistent(tmp_path: Path) -> None:
    free = write(tmp_path, {**GOOD, "decode_s_per_step": 0.0, "decode_s_per_seq": 0.0})
    with pytest.raises(InputError, match="inconsistent decode times") as info:
        load_profile(free)
    assert str(free) in str(info.value) and "\n" not in str(info.value)
    # one decode term is enough: a line measured through the origin has no intercept
    assert TimeProfile(**{**GOOD, "decode_s_per_step": 0.0}).decode_step_s(2) == pytest.approx(2e-4)


def test_missing_field_and_bad_yaml_and_unknown_name(tmp_path: Path) -> None:
    partial = {k: v for k, v in GOOD.items() if k != "max_batch"}
    with pytest.raises(InputError, match="max_batch"):
        load_profile(write(tmp_path, partial))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_profile(bad)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="mapping"):
        load_profile(listed)
    with pytest.raises(InputError, match="no such profile"):
        load_profile("no-such-profile")


def test_prices_defaults_are_the_reference_list_prices() -> None:
    prices = load_prices(None)
    assert prices == Prices()
    assert prices.serverless_gpu_s == pytest.approx(0.00053)
    assert prices.vm_gpu_s == pytest.approx(30.13 / 8 / 3600, rel=0.01)
    assert "REFERENCE" in prices.source


def test_prices_override_from_yaml_and_json(tmp_path: Path) -> None:
    prices = load_prices(write(tmp_path, {"vm_gpu_s": 0.002, "keep_alive_s": 5}))
    assert (prices.vm_gpu_s, prices.keep_alive_s) == (0.002, 5)
    assert prices.serverless_gpu_s == Prices().serverless_gpu_s
    prices = load_prices(write(tmp_path, {"bill_cold_start": False}, "x.json"))
    assert prices.bill_cold_start is False


@pytest.mark.parametrize("field", ["serverless_gpu_s", "vm_gpu_s", "keep_alive_s"])
def test_negative_price_is_an_input_error(tmp_path: Path, field: str) -> None:
    path = write(tmp_path, {field: -0.001})
    with pytest.raises(InputError, match=f"'{field}'") as info:
        load_prices(path)
    assert str(path) in str(info.value)
