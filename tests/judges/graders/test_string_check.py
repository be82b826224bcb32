"""`string_check` against Python's own string comparison, every operation, with templates
filled from the item and the sample."""

from __future__ import annotations

import pytest

from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.templates import sample_of

CASES = [  # input, reference, operation, expected
    ("Paris", "Paris", "eq", 1.0),
    ("Paris", "paris", "eq", 0.0),
    ("Paris", "paris", "ne", 1.0),
    ("Paris", "Paris", "ne", 0.0),
    ("The answer is Paris.", "Paris", "like", 1.0),
    ("The answer is PARIS.", "Paris", "like", 0.0),
    ("The answer is PARIS.", "Paris", "ilike", 1.0),
    ("Straße", "STRASSE", "ilike", 1.0),  # casefolded, not only lowercased
    ("The answer is Rome.", "Paris", "ilike", 0.0),
    ("", "", "like", 1.0),
]


@pytest.mark.parametrize(("given", "reference", "operation", "expected"), CASES)
def test_every_operation_compares_as_python_does(
    given: str, reference: str, operation: str, expected: float
) -> None:
    grader = parse_grader(
        {
            "type": "string_check",
            "name": "check",
            "input": "{{sample.output_text}}",
            "reference": "{{ item.answer }}",
            "operation": operation,
        }
    )
    assert grader.grade(sample_of(given), {"answer": reference}).reward == expected
