"""An OpenAI grader as a CGPO judge (`{"name": "grader", "grader": FILE, "sub_grader": NAME,
"pass_threshold": T}`): satisfied at or above the threshold, violated below it, failed (not
violated) when the grade itself fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlguard.judges.base import FAILED, SATISFIED, VIOLATED
from rlguard.judges.registry import JudgeSpec, build_judge
from sums_grader import SUMS_GRADER


@pytest.fixture
def grader_file(tmp_path: Path) -> str:
    path = tmp_path / "grader.json"
    path.write_text(json.dumps({**SUMS_GRADER, "calculate_output": "right"}))
    return str(path)


def test_a_sub_grader_passes_at_its_threshold(grader_file: str) -> None:
    judge = build_judge(JudgeSpec(name="grader", grader=grader_file, sub_grader="right"))
    texts = ["The final answer is 4.", "The final answer is 5.", "The final answer is 4."]
    items = [{"answer": "4"}, {"answer": "4"}, {"no": "answer"}]
    verdicts = judge.evaluate(["q"] * 3, texts, items)
    assert [v.value for v in verdicts] == [SATISFIED, VIOLATED, FAILED]
    assert verdicts[1].reason == "right scored 0.000 < 1.0"
    assert judge.name == "grader.right"


def test_a_similarity_constraint_passes_above_its_bar(grader_file: str) -> None:
    spec = JudgeSpec(name="grader", grader=grader_file, sub_grader="form", pass_threshold=0.9)
    judge = build_judge(spec)
    got = judge.judge(["q", "q"], ["The final answer is 5.", "five"], [{"answer": "4"}] * 2)
    assert got == [SATISFIED, VIOLATED]


def test_a_missing_sub_grader_fails_and_the_spec_needs_a_file(grader_file: str) -> None:
    judge = build_judge(JudgeSpec(name="grader", grader=grader_file, sub_grader="style"))
    assert judge.judge(["q"], ["x"], [{"answer": "4"}]) == [FAILED]
    with pytest.raises(ValueError, match="the grader judge, and it alone, takes a grader"):
        JudgeSpec(name="grader")
    with pytest.raises(ValueError, match="the grader judge, and it alone, takes a grader"):
        JudgeSpec(name="math", grader=grader_file)
