"""Watch specs: presets fill the fields, the spec's own override them, bad specs name the field
and the value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from rlguard.platform.watchers import WatchSpec
from rlguard.platform.watchers.presets import PRESETS


def refused(**fields) -> str:
    with pytest.raises(ValidationError) as caught:
        WatchSpec(**fields)
    return str(caught.value)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_makes_a_valid_spec(name):
    spec = WatchSpec(preset=name)
    assert spec.eval_tag and spec.path and spec.checkpoints and "{step}" in spec.checkpoints


def test_spec_fields_override_the_preset():
    spec = WatchSpec(preset="trl", source="trainer_state", eval_tag="eval_score", kl_tag=None)
    assert spec.path == "output/checkpoint-*/trainer_state.json"  # the preset's, for that source
    assert spec.eval_tag == "eval_score" and spec.kl_tag is None and spec.proxy_tag == "reward"


def test_unknown_preset_or_source_of_a_preset():
    assert "preset 'megatron' is unknown" in refused(preset="megatron")
    assert "preset 'nemo-rl' has no source 'jsonl'" in refused(preset="nemo-rl", source="jsonl")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("path", "/var/lib/rlguard/store.db"),
        ("path", "../other-job/metrics.jsonl"),
        ("path", "logs/../../x"),
        ("path", "~/metrics.jsonl"),
        ("checkpoints", "/ckpt/checkpoint-{step}"),
        ("checkpoints", "../checkpoint-{step}"),
        ("checkpoint_ready", "../x"),
    ],
)
def test_paths_leaving_the_job_directory_are_refused(field, value):
    fields = {"source": "jsonl", "path": "m.jsonl", "eval_tag": "score", field: value}
    message = refused(**fields)
    assert field in message and repr(value) in message


def test_total_steps_file_outside_is_refused():
    message = refused(
        source="jsonl", path="m.jsonl", eval_tag="s", total_steps={"file": "/etc/x", "key": "n"}
    )
    assert "total_steps" in message and "'/etc/x'" in message


def test_checkpoint_glob_needs_one_step_field():
    message = refused(source="jsonl", path="m.jsonl", eval_tag="s", checkpoints="ckpt-*")
    assert "checkpoints 'ckpt-*' must hold {step} exactly once" in message


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (r"eval score \d+\.\d+", "has no capture group"),
        (r"eval (\d+) (\d\.\d+)", "unnamed groups"),
        (r"step (?P<step>\d+) acc (?P<acc>[\d.]+)", "names groups ['acc']"),
        (r"step (?P<step>\d+)", "names groups but not (?P<score>...)"),
        (r"eval ([\d.]+", "is not a regular expression RE2 takes"),
        (r"(?P<score>\d)\1", "invalid escape sequence"),  # a backreference: RE2 has none
        (r"acc (?=x)(?P<score>\d)", "invalid perl operator"),  # lookaround neither
        (r"total_steps=(\d+)", None),
    ],
)
def test_bad_regexes_are_refused_with_the_regex(regex, expected):
    if expected is None:  # a total_steps regex is RE2's too
        total = {"file": "out.log", "regex": r"(\d+)\1"}
        message = refused(source="stdout", eval_tag="acc", regex=regex, total_steps=total)
        assert "total_steps.regex" in message and "invalid escape sequence" in message
        return
    message = refused(source="stdout", path="stdout.log", eval_tag="acc", regex=regex)
    assert "regex" in message and expected in message and repr(regex) in message


def test_stdout_needs_a_regex_and_only_stdout_takes_one():
    assert "needs a regex" in refused(source="stdout", path="out.log", eval_tag="acc")
    assert "regex is for source stdout" in refused(
        source="jsonl", path="m.jsonl", eval_tag="acc", regex="(x)"
    )


def test_unknown_fields_and_values_are_refused():
    assert "evaltag" in refused(source="jsonl", path="m.jsonl", eval_tag="s", evaltag="x")
    assert "mode" in refused(source="jsonl", path="m.jsonl", eval_tag="s", mode="up")
    assert "total_steps" in refused(source="jsonl", path="m.jsonl", eval_tag="s", total_steps=0)
    assert "either tag, or file" in refused(
        source="jsonl", path="m.jsonl", eval_tag="s", total_steps={"tag": "t", "file": "f"}
    )


def test_stdout_groups_become_tags():
    spec = WatchSpec(
        source="stdout",
        path="stdout.log",
        eval_tag="acc",
        regex=r"step=(?P<step>\d+) acc=(?P<score>\S+) reward=(?P<proxy>\S+)",
    )
    assert spec.tags == {"eval": "acc", "proxy": "proxy"}
