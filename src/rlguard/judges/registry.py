"""Judges by name, for the CLI and for task configs.

`math`, `code` and `instructions` need nothing but the sample's metadata; the LLM judges
(`false_refusal`, `factuality`, `safety`) need a classifier: a local HF model or an
OpenAI-compatible endpoint that returns logprobs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rlguard.errors import InputError
from rlguard.judges.base import Judge
from rlguard.judges.code import CodeJudge
from rlguard.judges.instructions import InstructionJudge
from rlguard.judges.math import MathJudge

RULE_JUDGES: dict[str, Callable[[], Judge]] = {
    "math": MathJudge,
    "code": CodeJudge,
    "instructions": InstructionJudge,
}
LLM_JUDGES = ("false_refusal", "factuality", "safety")
GRADER_JUDGE = "grader"  # an OpenAI grader's file (judges/graders/judge.py)
JUDGE_NAMES = (*RULE_JUDGES, *LLM_JUDGES, GRADER_JUDGE)


class JudgeSpec(BaseModel):
    """A judge by name; LLM judges also name their classifier (`model` or `endpoint`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str | None = Field(None, description="local HF causal LM (path) for an LLM judge")
    endpoint: str | None = Field(None, description="OpenAI-compatible base URL for an LLM judge")
    endpoint_model: str | None = Field(None, description="model name the endpoint serves")
    api_key_env: str = Field("OPENAI_API_KEY", description="env var holding the endpoint's key")
    threshold: float = Field(0.5, gt=0, lt=1, description="p(positive) needed to pass")
    grader: str | None = Field(None, description="the grader judge's OpenAI grader (JSON file)")
    sub_grader: str | None = Field(None, description="the grader judge's sub-grader, by name")
    pass_threshold: float = Field(1.0, description="the grader judge's score needed to pass")

    @model_validator(mode="after")
    def _check(self) -> JudgeSpec:
        if self.name not in JUDGE_NAMES:
            raise ValueError(f"unknown judge {self.name!r} (choose from {', '.join(JUDGE_NAMES)})")
        if self.name in LLM_JUDGES and (self.model is None) == (self.endpoint is None):
            raise ValueError(f"LLM judge {self.name!r} needs exactly one of model or endpoint")
        if self.endpoint is not None and self.endpoint_model is None:
            raise ValueError(f"LLM judge {self.name!r}: endpoint needs endpoint_model")
        if (self.name == GRADER_JUDGE) != (self.grader is not None):
            raise ValueError("the grader judge, and it alone, takes a grader (a JSON file)")
        return self


def build_judge(spec: JudgeSpec) -> Judge:
    if spec.name in RULE_JUDGES:
        return RULE_JUDGES[spec.name]()
    if spec.name == GRADER_JUDGE:
        from rlguard.judges.graders.judge import GraderJudge

        return GraderJudge(spec.grader, spec.sub_grader, spec.pass_threshold)  # type: ignore[arg-type]
    from rlguard.judges.llm import LLMJudge

    if spec.model is not None:
        if not Path(spec.model).exists():  # offline: a model is a local directory
            raise InputError(f"judge {spec.name!r}: model: no such directory {spec.model}")
        from rlguard.judges.llm import HFBackend  # torch, only for a local model

        backend = HFBackend.from_pretrained(spec.model)
    else:
        from rlguard.judges.llm import OpenAIBackend

        backend = OpenAIBackend(spec.endpoint, spec.endpoint_model, api_key_env=spec.api_key_env)
    return LLMJudge.from_template(spec.name, backend, threshold=spec.threshold)
