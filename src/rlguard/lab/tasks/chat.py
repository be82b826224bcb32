"""Open chat-like prompts with no precise judge: CGPO can only hold them near the reference.

Gold is a hidden rubric standing in for a careful human rater: on topic, a few sentences (4 to 30
words), no sentence said twice, and finished (ends with a period). A flawed response drifts to
another topic or repeats itself.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from rlguard.lab.tasks.base import Row
from rlguard.lab.tasks.instructions import ADJECTIVES, TOPICS

QUESTIONS = [
    "Tell me about the {topic}.",
    "What is the {topic} like?",
    "Say something about the {topic}.",
]


def mentions(text: str, topic: str) -> bool:
    return topic in text.lower().replace(".", " ").split()


def rubric(completion: str, topic: str) -> float:
    sentences = [s.strip() for s in completion.split(".") if s.strip()]
    words = len(completion.split())
    return float(
        mentions(completion, topic)
        and 4 <= words <= 30
        and len(set(sentences)) == len(sentences)
        and completion.rstrip().endswith(".")
    )


class Chat:
    name: ClassVar[str] = "chat"
    judges: ClassVar[tuple[str, ...]] = ()

    def prompt(self, rng: random.Random) -> Row:
        topic = rng.choice(TOPICS)
        return Row(self.name, rng.choice(QUESTIONS).format(topic=topic) + "\n", {"topic": topic})

    def respond(self, row: Row, rng: random.Random, correct: bool, elaboration: int) -> str:
        topic = row.metadata["topic"]
        a, b, c = rng.sample(ADJECTIVES, 3)
        more = [
            f"many people visit the {topic}.",
            f"it looks {b} in the morning.",
            f"the {topic} feels {c} at night.",
        ]
        sentences = [f"the {topic} is {a}.", *more[: min(elaboration, 3)]]
        if correct:
            return " ".join(sentences)
        if rng.random() < 0.5:
            other = rng.choice([t for t in TOPICS if t != topic])
            return " ".join(s.replace(topic, other) for s in sentences)
        return " ".join([sentences[0]] * (len(sentences) + 1))

    def gold(self, rows: Sequence[Row], completions: Sequence[str]) -> list[float]:
        return [rubric(c, r.metadata["topic"]) for r, c in zip(rows, completions, strict=True)]
