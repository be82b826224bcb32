"""What every grader shares: its name, the Grade it returns, and GraderError, the one way a
grader says a request is wrong (a 4xx naming the field) or the server cannot grade (503)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict


class GraderError(ValueError):
    """`param`: the request field at fault (`grader.graders.exact.input`)."""

    def __init__(self, message: str, param: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.param, self.status = message, param, status


@dataclass(frozen=True)
class Grade:
    reward: float
    sub_rewards: dict[str, float] = field(default_factory=dict)  # a multigrader's, by name
    errors: dict[str, Any] = field(default_factory=dict)  # OpenAI's flags, those raised
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # a model grader's tokens

    @classmethod
    def combined(cls, reward: float, parts: dict[str, Grade]) -> Grade:
        """A multigrader's grade: its sub-graders' rewards, errors and token usage."""
        errors: dict[str, Any] = {}
        usage: dict[str, dict[str, int]] = {}
        for part in parts.values():
            errors.update(part.errors)
            for model, tokens in part.usage.items():
                mine = usage.setdefault(model, dict.fromkeys(tokens, 0))
                for key, count in tokens.items():
                    mine[key] = mine.get(key, 0) + count
        sub_rewards = {name: part.reward for name, part in parts.items()}
        return cls(reward, sub_rewards, errors, usage)


class Grader(BaseModel):
    """Fields OpenAI's API does not define (an eval's `pass_threshold`) are ignored, as a grader
    copied from an eval still grades."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str

    def check(self, at: str = "grader") -> None:
        """What validating checks beyond the fields, without a sample: most graders, nothing."""

    def grade(self, sample: dict[str, Any], item: Any, at: str = "grader") -> Grade:
        """The reward for one model sample (templates.sample_of) and its dataset item; `at` is
        where this grader sits in the request, for errors."""
        raise NotImplementedError
