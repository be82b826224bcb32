"""An OpenAI grader as a training reward: rlguard.judges.graders.reward:grade, loaded through a
task's `reward: {function, options}`, reads each prompt's metadata as the grader's item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.train.config import RewardSpec
from rlguard.train.rewards import load_reward, score
from sums_grader import SUMS_GRADER


@pytest.fixture
def reward(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "grader.json").write_text(json.dumps(SUMS_GRADER))
    spec = RewardSpec(
        function="rlguard.judges.graders.reward:grade",
        options={"grader": str(tmp_path / "grader.json")},
    )
    return load_reward(spec, "tasks.0.reward")


def test_each_completion_is_graded_against_its_prompts_item(reward) -> None:  # type: ignore[no-untyped-def]
    completions = ["The final answer is 4.", "The final answer is 3.", "four"]
    items = [{"answer": "4"}, {"answer": "4"}, {"answer": "4"}]
    got = score(reward, ["q"] * 3, completions, metadata=items).tolist()
    assert got[0] == pytest.approx(1.0)
    assert 0.15 < got[1] < 0.2  # the form alone: 21 of 22 characters alike
    assert got[2] < got[1]


def test_a_grade_that_fails_on_one_item_scores_0_and_the_rest_go_on(reward) -> None:  # type: ignore[no-untyped-def]
    items = [{"answer": "4"}, {"other": "no answer"}]  # {{item.answer}} is missing in the second
    got = score(reward, ["q", "q"], ["is 4.", "is 4."], metadata=items).tolist()
    assert got[0] > 0.8 and got[1] == 0.0


def test_metadata_reaches_only_a_function_that_takes_it() -> None:
    spec = RewardSpec(function="rlguard.train.toy:proxy_reward")  # (prompts, completions)
    got = score(load_reward(spec, "reward"), ["q"], ["x" * 30], metadata=[{"a": 1}])
    assert got.tolist() == [0.0]


def test_options_need_a_function_and_an_unreadable_grader_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="options are a function's keyword arguments"):
        RewardSpec(model="some/dir", options={"grader": "g.json"})
    spec = RewardSpec(
        function="rlguard.judges.graders.reward:grade",
        options={"grader": str(tmp_path / "missing.json")},
    )
    with pytest.raises(InputError, match=r"missing\.json: cannot read a grader"):
        score(load_reward(spec, "reward"), ["q"], ["a"], metadata=[{}])


def test_a_sub_graders_score_is_read_from_the_same_grade(tmp_path: Path) -> None:
    (tmp_path / "grader.json").write_text(json.dumps(SUMS_GRADER))

    def sub(name: str):  # type: ignore[no-untyped-def]
        options = {"grader": str(tmp_path / "grader.json"), "sub_grader": name}
        spec = RewardSpec(function="rlguard.judges.graders.reward:grade", options=options)
        return load_reward(spec, f"scores.{name}")

    completions, items = ["The final answer is 4.", "The final answer is 3."], [{"answer": "4"}] * 2
    right = score(sub("right"), ["q"] * 2, completions, metadata=items).tolist()
    assert right == [1.0, 0.0]
    with pytest.raises(InputError, match="the grader has no sub-grader 'style'"):
        score(sub("style"), ["q"], ["a"], metadata=[{}])
