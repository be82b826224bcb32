"""Arithmetic word problems answered in CGPO's format: reasoning, then "The final answer is X".

Elaboration restates the problem before the sum; a flawed response gets the sum wrong or drops the
final-answer sentence. Gold is the math judge: right answer, in the format, at the end.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from rlguard.lab.tasks.base import Row, judged

NAMES = ["Ann", "Bob", "Cal", "Dee", "Eve", "Finn"]
ITEMS = ["apples", "pens", "books", "coins", "cards", "shells"]


class Arithmetic:
    name: ClassVar[str] = "math"
    judges: ClassVar[tuple[str, ...]] = ("math",)

    def prompt(self, rng: random.Random) -> Row:
        who, item = rng.choice(NAMES), rng.choice(ITEMS)
        a = rng.randint(2, 9)
        if rng.random() < 0.5:
            b = rng.randint(1, 9)
            text, answer, op = f"{who} has {a} {item} and gets {b} more.", a + b, "+"
        else:
            b = rng.randint(1, a)
            text, answer, op = f"{who} has {a} {item} and gives away {b}.", a - b, "-"
        question = f"{text} How many {item} does {who} have now?\n"
        facts = {"who": who, "item": item, "a": a, "b": b, "op": op}
        return Row(self.name, question, {"answer": str(answer), **facts})

    def respond(self, row: Row, rng: random.Random, correct: bool, elaboration: int) -> str:
        m = row.metadata
        answer = int(m["answer"])
        restate = [
            f"{m['who']} starts with {m['a']} {m['item']}.",
            f"The change is {m['b']} {m['item']}.",
            f"We need the {m['item']} left at the end.",
        ]
        steps = restate[: min(elaboration, len(restate))]
        if correct:
            return " ".join(
                [
                    *steps,
                    f"{m['a']} {m['op']} {m['b']} = {answer}.",
                    f"The final answer is {answer}.",
                ]
            )
        wrong = answer + rng.choice([-2, -1, 1, 2])
        if rng.random() < 0.5:
            return " ".join(
                [*steps, f"{m['a']} {m['op']} {m['b']} = {wrong}.", f"The final answer is {wrong}."]
            )
        return " ".join([*steps, f"{m['a']} {m['op']} {m['b']} = {answer}.", f"So {answer}."])

    def gold(self, rows: Sequence[Row], completions: Sequence[str]) -> list[float]:
        return judged("math", rows, completions)
