"""`score_model`: recognized in OpenAI's shape (input messages, model, range, sampling_params),
then refused: scoring needs a model the operator registers, and none can be yet."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from rlguard.judges.graders.base import Grader


class ScoreModelGrader(Grader):
    type: Literal["score_model"]
    input: list[dict[str, Any]]
    model: str
    range: list[float] | None = None
    sampling_params: dict[str, Any] | None = None

    @field_validator("model")
    @classmethod
    def _registered(cls, model: str) -> str:
        raise ValueError("score_model needs a registered model (not available yet)")
