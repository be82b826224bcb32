"""Descriptions under verifiable instructions (IFEval ids): lowercase, a word limit, the topic's
word, and either no commas or a fixed closing phrase.

Elaboration adds sentences, so past the word limit length itself breaks an instruction. A flawed
response capitalises, adds a comma, drops the closing phrase or describes another topic. Gold is
the instruction judge.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from rlguard.lab.tasks.base import Row, judged

TOPICS = ["sea", "sky", "moon", "city", "tree", "rain", "river", "road"]
ADJECTIVES = ["calm", "wide", "old", "cold", "bright", "loud", "soft", "dark"]
END_PHRASE = "that is all."


class Instructions:
    name: ClassVar[str] = "instructions"
    judges: ClassVar[tuple[str, ...]] = ("instructions",)

    def prompt(self, rng: random.Random) -> Row:
        topic = rng.choice(TOPICS)
        ids = [
            "change_case:english_lowercase",
            "keywords:existence",
            "length_constraints:number_words",
        ]
        ends = rng.random() < 0.5
        limit = 18 if ends else 15  # room for the closing phrase
        kwargs: list[dict] = [
            {},
            {"keywords": [topic]},
            {"relation": "less than", "num_words": limit + 1},
        ]
        if not ends:
            ids.append("punctuation:no_comma")
            kwargs.append({})
            extra = "without commas"
        else:
            ids.append("startend:end_checker")
            kwargs.append({"end_phrase": END_PHRASE})
            extra = f"and end with '{END_PHRASE}'"
        text = f"Describe the {topic} in lowercase {extra}. Use at most {limit} words.\n"
        return Row(self.name, text, {"instruction_id_list": ids, "kwargs": kwargs, "topic": topic})

    def respond(self, row: Row, rng: random.Random, correct: bool, elaboration: int) -> str:
        topic = row.metadata["topic"]
        a, b, c = rng.sample(ADJECTIVES, 3)
        more = [f"it is {b} today.", f"i like the {c} {topic}.", f"the {topic} is {c} too."]
        sentences = [f"the {topic} is {a}.", *more[: min(elaboration, 3)]]
        ends = row.metadata["instruction_id_list"][-1] == "startend:end_checker"
        if ends:
            sentences.append(END_PHRASE)
        if correct:
            return " ".join(sentences)
        flaw = rng.choice(["capital", "topic", "end" if ends else "comma"])
        if flaw == "capital":
            sentences[0] = sentences[0].capitalize()
        elif flaw == "comma":
            sentences[0] = f"the {topic}, is {a}."
        elif flaw == "end":
            sentences.pop()
        else:
            other = rng.choice([t for t in TOPICS if t != topic])
            sentences = [s.replace(topic, other) for s in sentences]
        return " ".join(sentences)

    def gold(self, rows: Sequence[Row], completions: Sequence[str]) -> list[float]:
        return judged("instructions", rows, completions)
