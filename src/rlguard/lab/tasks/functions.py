"""Small Python functions with unit tests, run by the code judge in its sandbox.

The description names the operation; the function name does not give it away. Elaboration is
prose before the fenced code; a flawed response uses another operation. Gold is the unit tests.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from rlguard.lab.tasks.base import Row, judged

OPERATIONS = {
    "the sum of a and b": ("a + b", lambda a, b: a + b),
    "a minus b": ("a - b", lambda a, b: a - b),
    "the product of a and b": ("a * b", lambda a, b: a * b),
    "the larger of a and b": ("max(a, b)", max),
    "the smaller of a and b": ("min(a, b)", min),
}
FUNCTION_NAMES = ["calc", "solve", "combine", "apply", "pick", "merge"]
TEST_INPUTS = [(3, 5), (7, 2), (4, 4)]


class Functions:
    name: ClassVar[str] = "code"
    judges: ClassVar[tuple[str, ...]] = ("code",)

    def prompt(self, rng: random.Random) -> Row:
        description = rng.choice(list(OPERATIONS))
        function = rng.choice(FUNCTION_NAMES)
        compute = OPERATIONS[description][1]
        tests = "\n".join(f"assert {function}({a}, {b}) == {compute(a, b)}" for a, b in TEST_INPUTS)
        text = f"Write a Python function {function}(a, b) that returns {description}.\n"
        return Row(
            self.name, text, {"unit_tests": tests, "function": function, "description": description}
        )

    def respond(self, row: Row, rng: random.Random, correct: bool, elaboration: int) -> str:
        m = row.metadata
        expression = OPERATIONS[m["description"]][0]
        if not correct:
            expression = rng.choice([e for e, _ in OPERATIONS.values() if e != expression])
        prose = [
            f"Here is {m['function']}.",
            f"It returns {m['description']}.",
            "It takes two numbers.",
        ][: min(elaboration, 3)]
        code = f"```python\ndef {m['function']}(a, b):\n    return {expression}\n```"
        return "\n".join([" ".join(prose), code]) if prose else code

    def gold(self, rows: Sequence[Row], completions: Sequence[str]) -> list[float]:
        return judged("code", rows, completions)
