"""The multigrader: named sub-graders on one sample, combined by `calculate_output` with
OpenAI's operators and functions (each checked against Python's math); anything else in a
formula, or a name no sub-grader has, refused naming calculate_output."""

from __future__ import annotations

import math

import pytest

from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.formula import FormulaError, evaluate
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.templates import sample_of

A, B = 0.5, 0.25
FORMULAS = {  # OpenAI's operators and functions, and Python's value of each
    "(a + b) / 2": (A + B) / 2,
    "a - b * 2": A - B * 2,
    "a ^ 2": A**2,
    "2 * a ^ 2 + b": 2 * A**2 + B,  # ^ binds tighter than * and +
    "2 ^ 3 ^ 2": 2**9,  # and from the right
    "-a ^ 2": -(A**2),
    "min(a, b) + max(a, b, 0.9)": min(A, B) + max(A, B, 0.9),
    "abs(b - a)": abs(B - A),
    "floor(a * 10) + ceil(b * 10)": math.floor(A * 10) + math.ceil(B * 10),
    "exp(a) * sqrt(b)": math.exp(A) * math.sqrt(B),
    "log(a) + log(8, 2)": math.log(A) + math.log(8, 2),
    "a": A,
}
NOT_FORMULAS = {
    "a > b": "Compare",
    "a if b else 0": "IfExp",
    "a and b": "BoolOp",
    "a ** 2": "a power is '^'",
    "a.real": "Attribute",
    "c + 1": "'c' is not defined",
    "__import__('os')": "'__import__' not defined",
    "'a'": "is not a number",
    "a; b": "invalid syntax",
    "": "invalid syntax",
    "floor(a, b)": "takes 1 positional argument",
    "max(a=1)": "keyword",
}


@pytest.mark.parametrize(("text", "value"), FORMULAS.items(), ids=list(FORMULAS))
def test_operators_and_functions_are_pythons_math(text: str, value: float) -> None:
    assert evaluate(text, {"a": A, "b": B}) == pytest.approx(value)


@pytest.mark.parametrize(("text", "said"), NOT_FORMULAS.items(), ids=list(NOT_FORMULAS))
def test_anything_else_is_not_a_formula(text: str, said: str) -> None:
    with pytest.raises(FormulaError, match="not a formula") as refused:
        evaluate(text, {"a": A, "b": B})
    assert refused.value.structural and said in str(refused.value)


@pytest.mark.parametrize("text", ["a / (b - 0.25)", "log(b - 0.25)", "10 ^ 400", "(-1) ^ a"])
def test_a_formula_without_a_finite_value_says_so(text: str) -> None:
    with pytest.raises(FormulaError) as refused:
        evaluate(text, {"a": A, "b": B})
    assert not refused.value.structural


EMAIL = {
    "type": "string_check",
    "name": "email_grader",
    "input": "{{sample.output_json.email}}",
    "reference": "{{item.email}}",
    "operation": "eq",
}
NAME = {
    "type": "text_similarity",
    "name": "name_grader",
    "input": "{{sample.output_json.name}}",
    "reference": "{{item.name}}",
    "evaluation_metric": "fuzzy_match",
}
MULTI = {
    "type": "multi",
    "name": "contact",
    "graders": {"name": NAME, "email": EMAIL},
    "calculate_output": "(name + email) / 2",
}
ITEM = {"name": "Jane Doe", "email": "jane@example.com"}


def test_sub_graders_score_one_sample_and_the_formula_combines_them() -> None:
    sample = sample_of('{"name": "Jane Do", "email": "jane@example.com"}')
    grade = parse_grader(MULTI).grade(sample, ITEM)
    name = 1 - 1 / 15  # one character of "Jane Doe"'s 8 missing: InDel 1 over 15 characters
    assert grade.sub_rewards == pytest.approx({"name": name, "email": 1.0})
    assert grade.reward == pytest.approx((name + 1.0) / 2)


def test_a_single_grader_is_named_by_its_name() -> None:
    grader = parse_grader({**MULTI, "graders": EMAIL, "calculate_output": "email_grader * 0.5"})
    assert grader.grade(sample_of('{"email": "jane@example.com"}'), ITEM).reward == 0.5


@pytest.mark.parametrize(
    ("change", "param", "said"),
    [
        ({"calculate_output": "nam + email"}, "grader.calculate_output", "'nam' is not defined"),
        ({"calculate_output": "name > email"}, "grader.calculate_output", "Compare"),
        ({"graders": {}}, "grader.graders", "at least 1 item"),
        ({"graders": {"inner": MULTI}}, "grader.graders.inner.type", '(got "multi")'),
        ({"graders": {"e": {**EMAIL, "operation": "x"}}}, "grader.graders.e.operation", "'eq'"),
    ],
)
def test_a_bad_multigrader_names_the_field(change: dict, param: str, said: str) -> None:
    with pytest.raises(GraderError) as refused:
        parse_grader({**MULTI, **change})
    assert refused.value.param == param and said in refused.value.message


def test_a_sub_graders_failure_names_the_sub_grader() -> None:
    with pytest.raises(GraderError) as refused:
        parse_grader(MULTI).grade(sample_of('{"name": "Jane"}'), ITEM)
    assert refused.value.param == "grader.graders.email.input"
    assert "names sample.output_json.email" in refused.value.message
