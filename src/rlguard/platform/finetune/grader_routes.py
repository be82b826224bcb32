"""OpenAI's `POST /v1/fine_tuning/alpha/graders/validate` and `/run` (the `read` scope): a
grader checked (a python grader's source run in the sandbox, without grading), or run on one
model sample and dataset item, in OpenAI's response shapes (a score_model grader on the
tenant's models: score_models.py). A bad grader, a template naming a
field the item or sample lacks, or a python grader that fails is a 400 naming the field; nothing
is stored."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.templates import sample_of
from rlguard.platform.api import Reader
from rlguard.platform.errors import ApiError
from rlguard.platform.finetune.score_models import TenantModels

router = APIRouter()
PATH = "/v1/fine_tuning/alpha/graders"
NO_ERRORS = {  # OpenAI's metadata.errors: a grade that reached this answer had none
    "formula_parse_error": False,
    "invalid_variable_error": False,
    "model_grader_parse_error": False,
    "model_grader_refusal_error": False,
    "model_grader_server_error": False,
    "model_grader_server_error_details": None,
    "other_error": False,
    "python_grader_runtime_error": False,
    "python_grader_runtime_error_details": None,
    "python_grader_server_error": False,
    "python_grader_server_error_type": None,
    "sample_parse_error": False,
    "truncated_observation_error": False,
    "unresponsive_reward_error": False,
}


class ValidateBody(BaseModel):
    grader: dict[str, Any]


class RunBody(BaseModel):
    grader: dict[str, Any]
    model_sample: str
    item: Any = None


def _refused(e: GraderError) -> ApiError:
    code = "invalid_grader" if e.status < 500 else "grader_unavailable"
    return ApiError(e.status, e.message, code, e.param)


@router.post(PATH + "/validate")
def validate(body: ValidateBody, request: Request, who: Reader) -> dict[str, Any]:
    try:
        grader = parse_grader(body.grader, models=TenantModels(request, who.tenant.id))
        grader.check()
    except GraderError as e:
        raise _refused(e) from None
    return {"grader": grader.model_dump(mode="json", exclude_unset=True)}


@router.post(PATH + "/run")
def run(body: RunBody, request: Request, who: Reader) -> dict[str, Any]:
    start = time.perf_counter()
    item = {} if body.item is None else body.item
    try:
        grader = parse_grader(body.grader, models=TenantModels(request, who.tenant.id))
        grade = grader.grade(sample_of(body.model_sample), item)
    except GraderError as e:
        raise _refused(e) from None
    return {
        "reward": grade.reward,
        "metadata": {
            "name": grader.name,
            "type": grader.type,
            "errors": {**NO_ERRORS, **grade.errors},
            "execution_time": time.perf_counter() - start,
            "scores": {},
            "token_usage": sum(u["total_tokens"] for u in grade.usage.values()) or None,
            "sampled_model_name": next(iter(grade.usage), None),
        },
        "sub_rewards": grade.sub_rewards,
        "model_grader_token_usage_per_model": grade.usage,
    }
