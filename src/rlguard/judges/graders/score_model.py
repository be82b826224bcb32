"""`score_model`: a model asked for a score. The grader's `input` messages (templates rendered
on the sample and item) go to a chat model; the first number in its answer (or the `result` of
a JSON object, the shape OpenAI's graders answer in) is the reward, when it lies in `range`
(default [0, 1]).

Which models may score is the caller's to say, through the validation context `models` (a
`ScoringModels`): the API offers the operator's registered base models and the tenant's
fine-tuned ones, generated on its inference pool; a job offers the base models its grader file
names with their local paths (`LocalModels`). Without one, a score_model grader is refused.

An answer with no number in range scores 0 with `model_grader_parse_error`, and a model that
refuses the prompt (too long for its context) 0 with `model_grader_server_error`, as OpenAI
flags them; neither is a request error. `reasoning_effort` is accepted and has no effect: the
models served here do not reason on a budget.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from rlguard.judges.graders import templates
from rlguard.judges.graders.base import Grade, Grader
from rlguard.judges.llm.chat_model import Completion, Refusal, Sampling

MAX_TOKENS = 256  # a score's answer, when sampling_params do not say
NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


class ScoringModels(Protocol):
    def refusal(self, model: str) -> str | None:
        """None when `model` can score here, else why not (the grader's `model` error)."""
        ...

    def complete(
        self, model: str, messages: list[dict[str, str]], sampling: Sampling
    ) -> Completion | Refusal: ...


class LocalModels:
    """Model directories on this host, by name (a job's view of its registered base models)."""

    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = paths

    def refusal(self, model: str) -> str | None:
        return None if model in self.paths else "not a model available to score here"

    def complete(
        self, model: str, messages: list[dict[str, str]], sampling: Sampling
    ) -> Completion | Refusal:
        from rlguard.judges.llm.chat_model import complete

        return complete(self.paths[model], messages, sampling)


class Message(BaseModel):
    """One of OpenAI's EvalItems: a role and its text (a string, or text content parts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "developer", "user", "assistant"]
    content: templates.Template | list[dict[str, Any]]
    type: Literal["message"] | None = None

    @field_validator("content")
    @classmethod
    def _text_only(cls, content: Any) -> Any:
        if isinstance(content, list):
            for part in content:
                if part.get("type") not in ("input_text", "output_text"):
                    raise ValueError(
                        f"only text content parts (input_text, output_text) can be scored "
                        f"here (got {part.get('type')!r})"
                    )
                templates.check(str(part.get("text", "")))
        return content

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(str(part.get("text", "")) for part in self.content)


class SamplingParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_completions_tokens: int | None = Field(None, ge=1, le=4096)
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None

    def sampling(self) -> Sampling:
        return Sampling(
            max_tokens=self.max_completions_tokens or MAX_TOKENS,
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            seed=self.seed,
        )


class ScoreModelGrader(Grader):
    type: Literal["score_model"]
    input: list[Message] = Field(min_length=1)
    model: str
    range: tuple[float, float] = (0.0, 1.0)
    sampling_params: SamplingParams = SamplingParams()
    _models: ScoringModels = PrivateAttr()

    @field_validator("model")
    @classmethod
    def _runnable(cls, model: str, info: ValidationInfo) -> str:
        models = (info.context or {}).get("models")
        if models is None:
            raise ValueError("no model can score here")
        if (why := models.refusal(model)) is not None:
            raise ValueError(why)
        return model

    @field_validator("range")
    @classmethod
    def _ordered(cls, bounds: tuple[float, float]) -> tuple[float, float]:
        if not (math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] < bounds[1]):
            raise ValueError("the range must be two finite numbers, the lower first")
        return bounds

    def model_post_init(self, context: Any) -> None:
        self._models = (context or {})["models"]  # the field's validator made sure of it

    def grade(self, sample: dict[str, Any], item: Any, at: str = "grader") -> Grade:
        messages = [
            {"role": m.role, "content": templates.render(m.text, sample, item, f"{at}.input.{i}")}
            for i, m in enumerate(self.input)
        ]
        done = self._models.complete(self.model, messages, self.sampling_params.sampling())
        if isinstance(done, Refusal):
            details = {"model_grader_server_error_details": done.message}
            return Grade(0.0, errors={"model_grader_server_error": True, **details})
        answer = done.choices[0]
        usage = {
            self.model: {
                "prompt_tokens": done.prompt_tokens,
                "completion_tokens": answer.tokens,
                "total_tokens": done.prompt_tokens + answer.tokens,
            }
        }
        score = score_in(answer.text, self.range)
        if score is None:
            return Grade(0.0, errors={"model_grader_parse_error": True}, usage=usage)
        return Grade(score, usage=usage)


def score_in(text: str, bounds: tuple[float, float]) -> float | None:
    """The answer's score: a JSON object's `result`, else its first number; None when there is
    none or it lies outside the bounds."""
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if isinstance(found, dict) and isinstance(found.get("result"), int | float):
        value = float(found["result"])
    elif (match := NUMBER.search(text)) is not None:
        value = float(match.group(0))
    else:
        return None
    return value if bounds[0] <= value <= bounds[1] else None
