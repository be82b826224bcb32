"""`--policy-args`: a policy's knobs as JSON, key=value pairs or a JSON/YAML file, and knobs per
base; every malformed value is one line naming the option and what it got."""

from __future__ import annotations

import pytest

from rlguard.cli.options import per_base, policy_args
from rlguard.errors import InputError

TIRESIAS = {"thresholds": [3250, 7200], "promote_knob": 8, "tick_s": None}


@pytest.mark.parametrize(
    "raw",
    [
        '{"thresholds": [3250, 7200], "promote_knob": 8, "tick_s": null}',
        "thresholds=[3250,7200],promote_knob=8,tick_s=null",
        " thresholds = [3250, 7200] , promote_knob=8, tick_s=null ",
    ],
)
def test_json_and_key_value_forms_agree(raw) -> None:
    assert policy_args(raw) == TIRESIAS


def test_empty_and_string_values() -> None:
    assert policy_args("") == {} and policy_args("{}") == {}
    assert policy_args("mode=reference") == {"mode": "reference"}


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_a_file_of_knobs(tmp_path, suffix) -> None:
    path = tmp_path / f"knobs.{suffix}"
    text = (
        "thresholds: [3250, 7200]\npromote_knob: 8\ntick_s: null\n"
        if suffix == "yaml"
        else '{"thresholds": [3250, 7200], "promote_knob": 8, "tick_s": null}'
    )
    path.write_text(text)
    assert policy_args(f"@{path}") == TIRESIAS


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("[1]", "expected key=value (got '[1]')"),
        ("tick_s", "expected key=value (got 'tick_s')"),
        ("a=1,=2", "expected key=value (got '=2')"),
        ("{oops", "not JSON"),
        ('"just a string"', "expected key=value"),
        ("@/no/such/knobs.yaml", "/no/such/knobs.yaml"),
    ],
)
def test_malformed_knobs_are_one_line(raw, says) -> None:
    with pytest.raises(InputError) as err:
        policy_args(raw)
    message = str(err.value)
    assert message.startswith("option --policy-args: ") and "\n" not in message
    assert says in message


def test_a_file_that_is_not_a_mapping(tmp_path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match=r"expected a mapping of knobs \(got \[1, 2\]\)"):
        policy_args(f"@{path}")


def test_knobs_per_base_or_for_every_base() -> None:
    bases = ["tiresias", "fifo"]
    assert per_base({"tiresias": {"tick_s": None}}, bases) == {
        "tiresias": {"tick_s": None},
        "fifo": {},
    }
    assert per_base({"tick_s": None}, ["tiresias"]) == {"tiresias": {"tick_s": None}}
    with pytest.raises(InputError, match="knobs for 'gittins', which is not among the bases"):
        per_base({"gittins": {"quantum": 10}}, bases)
