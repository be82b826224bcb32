"""`build_policy`: a named base policy with its knobs; every bad knob is one line naming the
policy, the field and the value."""

from __future__ import annotations

import pytest

from rlguard.cluster.policies.fifo import FifoStrict
from rlguard.cluster.policies.tiresias import Tiresias
from rlguard.cluster.registry import BASES, build_policy
from rlguard.errors import InputError


def test_every_base_builds_with_its_defaults() -> None:
    for name in BASES:
        assert build_policy(name).name == name


def test_knobs_reach_the_policy() -> None:
    policy = build_policy(
        "tiresias", {"thresholds": [1000, 2000, 4000], "promote_knob": 8, "tick_s": None}
    )
    assert isinstance(policy, Tiresias)
    assert policy.thresholds.tolist() == [1000.0, 2000.0, 4000.0]
    assert policy.promote_knob == 8.0 and policy.tick_s is None
    assert isinstance(build_policy("fifo-strict", {}), FifoStrict)


@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("tiresias", {"thresholds": [3250, 100]}, ["'thresholds'", "increasing", "[3250, 100]"]),
        ("tiresias", {"thresholds": [0, 100]}, ["'thresholds.0'", "(got 0)"]),
        ("tiresias", {"promote_knob": -1}, ["'promote_knob'", "(got -1)"]),
        ("tiresias", {"tick_s": "soon"}, ["'tick_s'", "(got 'soon')"]),
        ("tiresias", {"thresholdz": [1]}, ["'thresholdz'", "Unexpected", "(got [1])"]),
        ("fifo", {"tick_s": 5}, ["fifo", "'tick_s': 5"]),
        ("gittins", {"quantum": 0}, ["gittins", "quantum", "0"]),
        ("nope", {}, ["unknown policy 'nope'"]),
    ],
)
def test_bad_knobs_are_one_line_naming_field_and_value(name, args, says) -> None:
    with pytest.raises(InputError) as err:
        build_policy(name, args)
    message = str(err.value)
    assert message.startswith("option --policy-args: ") and "\n" not in message
    for part in says:
        assert part in message, (part, message)
