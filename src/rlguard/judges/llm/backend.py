"""What an LLM judge needs from a model: how much it prefers the positive label to the negative."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol


class ClassifierBackend(Protocol):
    def positive_probability(
        self, texts: Sequence[str], positive: str, negative: str
    ) -> list[float | None]:
        """p(positive) / (p(positive) + p(negative)) for the next token after each text.

        None marks a text the model gave no usable answer for. Transport failures (an unreachable
        endpoint) raise instead; the judge turns either into a -1 verdict.
        """
        ...


def normalized(logprob_positive: float, logprob_negative: float) -> float:
    """p_pos / (p_pos + p_neg) from log-probabilities without overflow; -inf is probability 0."""
    diff = logprob_positive - logprob_negative
    if diff >= 0:
        return 1.0 / (1.0 + math.exp(-diff))
    odds = math.exp(diff)
    return odds / (1.0 + odds)
