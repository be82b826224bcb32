"""`multi`: named sub-graders, each scored on the same sample and item, combined by
`calculate_output` (formula.py) over their names: `"(exact + similar) / 2"`. The sub-graders'
scores are the response's `sub_rewards`. `graders` is an object of named graders, as OpenAI's
guide writes it; a single grader (as the SDK's type has it) is taken as one named by its name.
A sub-grader may be of any type but multi, as in OpenAI's API."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from rlguard.judges.graders import formula
from rlguard.judges.graders.base import Grade, Grader, GraderError
from rlguard.judges.graders.python import PythonGrader
from rlguard.judges.graders.score_model import ScoreModelGrader
from rlguard.judges.graders.string_check import StringCheckGrader
from rlguard.judges.graders.text_similarity import TextSimilarityGrader

SubGrader = Annotated[
    StringCheckGrader | TextSimilarityGrader | PythonGrader | ScoreModelGrader,
    Field(discriminator="type"),
]


class MultiGrader(Grader):
    type: Literal["multi"]
    graders: dict[str, SubGrader] = Field(min_length=1)
    calculate_output: str

    @field_validator("graders", mode="before")
    @classmethod
    def _named(cls, graders: Any) -> Any:
        if isinstance(graders, dict) and isinstance(graders.get("type"), str):
            return {graders.get("name"): graders}  # one grader, under its own name
        return graders

    @field_validator("calculate_output")
    @classmethod
    def _formula(cls, text: str, info: ValidationInfo) -> str:
        if "graders" in info.data:  # else the graders' own error is the one reported
            formula.check(text, list(info.data["graders"]))
        return text

    def check(self, at: str = "grader") -> None:
        for name, grader in self.graders.items():
            grader.check(f"{at}.graders.{name}")

    def grade(self, sample: dict[str, Any], item: Any, at: str = "grader") -> Grade:
        parts = {
            name: grader.grade(sample, item, f"{at}.graders.{name}")
            for name, grader in self.graders.items()
        }
        scores = {name: part.reward for name, part in parts.items()}
        try:
            reward = formula.evaluate(self.calculate_output, scores)
        except formula.FormulaError as e:
            raise GraderError(f"{at}.calculate_output: {e}", f"{at}.calculate_output") from None
        return Grade.combined(reward, parts)
