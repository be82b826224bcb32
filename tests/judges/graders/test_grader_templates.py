"""Templates: dotted paths into the item and the sample (objects and arrays), values other than
strings as JSON, and a path the item or sample lacks as an error naming the template and field."""

from __future__ import annotations

import pytest

from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.templates import check, render, sample_of

ITEM = {"answer": "4", "meta": {"tags": ["math", "easy"], "level": 2, "ok": True}}


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("{{item.answer}}", "4"),
        ("a={{ item.answer }}, b={{item.meta.level}}", "a=4, b=2"),
        ("{{item.meta.tags.1}}", "easy"),
        ("{{item.meta.tags.-1}}", "easy"),
        ("{{item.meta.tags}}", '["math", "easy"]'),
        ("{{item.meta.ok}}", "true"),
        ("{{sample.output_text}}", '{"x": [1, 2]}'),
        ("{{sample.output_json.x.0}}", "1"),
        ("no template", "no template"),
    ],
)
def test_a_template_renders_its_value(text: str, rendered: str) -> None:
    assert render(text, sample_of('{"x": [1, 2]}'), ITEM, "grader.input") == rendered


@pytest.mark.parametrize(
    ("text", "sample", "field"),
    [
        ("{{item.reference}}", "x", "item.reference"),
        ("{{item.meta.tags.2}}", "x", "item.meta.tags.2"),
        ("{{item.answer.x}}", "x", "item.answer.x"),
        ("{{sample.output_json.x}}", "not json", "sample.output_json.x"),
        ("{{sample.output_json.y}}", '{"x": 1}', "sample.output_json.y"),
    ],
)
def test_a_missing_field_names_the_template_and_the_field(
    text: str, sample: str, field: str
) -> None:
    with pytest.raises(GraderError) as refused:
        render(f"answer: {text}", sample_of(sample), ITEM, "grader.reference")
    assert refused.value.param == "grader.reference"
    assert f"template {text} names {field}," in refused.value.message


def test_a_namespace_other_than_item_or_sample_is_refused() -> None:
    assert check("{{item.x}} {{ sample.output_text }}") == "{{item.x}} {{ sample.output_text }}"
    with pytest.raises(ValueError, match=r"template '\{\{output\.text\}\}' must start with"):
        check("{{output.text}}")
