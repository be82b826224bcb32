"""`string_check`: 1.0 when the rendered input and reference compare as the operation says,
else 0.0. `eq`/`ne`: equal or not (case-sensitive); `like`: the input contains the reference
(case-sensitive); `ilike`: contains it, ignoring case (Unicode casefolding)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from rlguard.judges.graders import templates
from rlguard.judges.graders.base import Grade, Grader

OPERATIONS: dict[str, Callable[[str, str], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "like": lambda a, b: b in a,
    "ilike": lambda a, b: b.casefold() in a.casefold(),
}


class StringCheckGrader(Grader):
    type: Literal["string_check"]
    input: templates.Template
    reference: templates.Template
    operation: Literal["eq", "ne", "like", "ilike"]

    def grade(self, sample: dict[str, Any], item: Any, at: str = "grader") -> Grade:
        given = templates.render(self.input, sample, item, f"{at}.input")
        reference = templates.render(self.reference, sample, item, f"{at}.reference")
        return Grade(1.0 if OPERATIONS[self.operation](given, reference) else 0.0)
