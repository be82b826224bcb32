"""`POST /v1/fine_tuning/jobs`'s body checked before anything is created: the model, each
file for its method, the grader (validated, and its templates tried on the first training
item), the hyperparameters resolved. Each refusal is a 400 in OpenAI's shape naming the field.

Beyond OpenAI's fields, `rlguard` (the SDK's `extra_body={"rlguard": {...}}`) carries what
rlguard's jobs take and OpenAI's do not: `gpus`, `cpus`, `memory_mb`, `budget_gpu_hours`,
`stop_policy` (EvalStop's override: `{"rule": "none"}` trains to the end) and `setup` (a quote),
plus `max_new_tokens` for a reinforcement job's samples (default 64) and `cgpo`, which trains
it with CGPO, its multigrader's named sub-graders as constraints (methods.stage_config).
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.templates import sample_of
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import File
from rlguard.platform.errors import ApiError
from rlguard.platform.finetune.base_models import RegisteredModel
from rlguard.platform.finetune.examples import CHAT, PREFERENCE
from rlguard.platform.finetune.launch import Plan
from rlguard.platform.finetune.methods import (
    DPO,
    REINFORCEMENT,
    SUPERVISED,
    parse_hyperparameters,
    resolve,
    stage_config,
)
from rlguard.platform.finetune.score_models import JobModels

MAX_NEW_TOKENS = 64
EXTENSION_FIELDS = ("gpus", "cpus", "memory_mb", "budget_gpu_hours", "stop_policy", "setup")
PLAN_FIELDS = ("max_new_tokens", "cgpo")  # how the job trains, not how it is run
CGPO_OPTIMIZERS = ("crpg", "crraft", "codpo")


class MethodBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["supervised", "dpo", "reinforcement"]
    supervised: dict[str, Any] | None = None
    dpo: dict[str, Any] | None = None
    reinforcement: dict[str, Any] | None = None


class FineTuningJobCreate(BaseModel):
    """OpenAI's request body; `integrations` (Weights & Biases) is refused when given."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=200)
    training_file: str = Field(min_length=1, max_length=64)
    validation_file: str | None = Field(None, max_length=64)
    hyperparameters: dict[str, Any] | None = None  # OpenAI's deprecated top-level field
    suffix: str | None = Field(None, max_length=64, pattern=r"^[A-Za-z0-9._-]*$")
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    method: MethodBody | None = None
    metadata: dict[str, str] | None = Field(None, max_length=16)
    integrations: list[dict[str, Any]] | None = None
    rlguard: dict[str, Any] | None = None


def _refuse(param: str, message: str, code: str = "invalid_value") -> ApiError:
    return ApiError(400, f"{param}: {message}", code, param)


def method_of(body: FineTuningJobCreate) -> tuple[str, dict[str, Any]]:
    """(method type, its settings): OpenAI's `method`, or the legacy top-level
    `hyperparameters`, which is a supervised job's."""
    if body.integrations:
        raise _refuse(
            "integrations",
            "integrations are not supported (the job's events and "
            "metrics are served by /v1/fine_tuning/jobs/{id}/events)",
        )
    if body.method is None:
        return SUPERVISED, {"hyperparameters": body.hyperparameters or {}}
    if body.hyperparameters is not None:
        raise _refuse("hyperparameters", "give hyperparameters inside method, not both")
    settings = getattr(body.method, body.method.type) or {}
    allowed = (
        {"hyperparameters", "grader"} if body.method.type == REINFORCEMENT else {"hyperparameters"}
    )
    for name in settings:
        if name not in allowed:
            raise _refuse(f"method.{body.method.type}.{name}", "unknown field")
    return body.method.type, settings


def check_file(row: File, method: str, param: str) -> None:
    wanted, other = (PREFERENCE, CHAT) if method == DPO else (CHAT, PREFERENCE)
    if row.shapes.get(other) or not row.shapes.get(wanted):
        kind = "preference" if wanted == PREFERENCE else "chat"
        raise _refuse(
            param,
            f"{row.filename}: a {method} job needs {kind} examples only "
            f"(the file holds {row.shapes.get(CHAT, 0)} chat and "
            f"{row.shapes.get(PREFERENCE, 0)} preference examples)",
        )


def checked_lines(store: ArtifactStore, row: File, method: str, param: str) -> dict[str, Any]:
    """The file's first example, once the file holds the method's kind of examples and each
    line what the method needs of it beyond its shape: supervised, an assistant turn;
    reinforcement, messages ending with the user's turn (a 400 naming the file and the line
    otherwise). Read through once (the file's size was bounded when it was uploaded); a DPO
    file only to its first example."""
    check_file(row, method, param)
    first = None
    with store.open_object(row.store_key) as stream:
        for number, raw in enumerate(stream, 1):
            if not raw.strip():
                continue
            example = json.loads(raw)
            first = example if first is None else first
            if method == DPO:
                break
            roles = [m["role"] for m in example["messages"]]
            problem = None
            if method == SUPERVISED and "assistant" not in roles:
                problem = "messages: a supervised example needs an assistant turn"
            if method == REINFORCEMENT and roles[-1] != "user":
                problem = (
                    "messages: a reinforcement example ends with the user's turn "
                    f"(got {roles[-1]!r} last)"
                )
            if problem is not None:
                message = f"{row.filename}: line {number}: {problem}"
                raise _refuse(param, message, "invalid_file")
    return first or {}


def check_grader(
    raw: Any, item: dict[str, Any], base_models: dict[str, RegisteredModel]
) -> dict[str, Any]:
    """The grader, validated and tried on the first training item (so a template naming a
    field the items lack is refused now, not after a run of zero rewards)."""
    if raw is None:
        raise _refuse("method.reinforcement.grader", "a reinforcement job needs a grader")
    at = "method.reinforcement.grader"
    try:
        grader = parse_grader(raw, at, JobModels(base_models))
        grader.check(at)
        grader.grade(sample_of(""), item, at)
    except GraderError as e:
        raise ApiError(e.status, e.message, "invalid_grader", e.param) from None
    return grader.model_dump(mode="json", exclude_unset=True)


def plan(
    body: FineTuningJobCreate,
    method: str,
    settings: dict[str, Any],
    model_dir: str,
    files: tuple[File, File | None],
    store: ArtifactStore,
    seed: int,
    base_models: dict[str, RegisteredModel],
) -> tuple[Plan, dict[str, Any]]:
    """The job's plan and its method as stored (type, resolved hyperparameters, grader).
    `base_models`: those a score_model grader may score with, inside the job."""
    training, validation = files
    first = checked_lines(store, training, method, "training_file")
    if validation is not None:
        checked_lines(store, validation, method, "validation_file")
    at = f"method.{method}.hyperparameters"
    given = parse_hyperparameters(method, settings.get("hyperparameters") or {}, at)
    examples = sum(training.shapes.values())
    hp = resolve(method, given, examples)
    grader, scorers = None, {}
    if method == REINFORCEMENT:
        grader = check_grader(settings.get("grader"), first, base_models)
        scorers = {name: base_models[name].path for name in scoring_models(grader)}
    extension = body.rlguard or {}
    max_new_tokens = extension.get("max_new_tokens", MAX_NEW_TOKENS)
    if not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= 4096:
        raise _refuse("rlguard.max_new_tokens", f"an integer in 1..4096 (got {max_new_tokens!r})")
    cgpo = cgpo_settings(extension.get("cgpo"), grader)
    held_out = validation or training
    subs = list(grader["graders"]) if grader is not None and grader["type"] == "multi" else []
    config = stage_config(
        method,
        hp,
        model_dir,
        examples,
        sum(held_out.shapes.values()),
        seed,
        max_new_tokens,
        cgpo,
        subs,
    )
    stored = {"type": method, "hyperparameters": hp}
    if grader is not None:
        stored["grader"] = grader
    return Plan(method, model_dir, training, validation, config, grader, scorers), stored


def scoring_models(grader: dict[str, Any]) -> set[str]:
    """The models a grader's score_model graders name (a multigrader's included)."""
    if grader["type"] == "score_model":
        return {grader["model"]}
    subs = grader.get("graders", {}).values() if grader["type"] == "multi" else ()
    return set().union(*(scoring_models(sub) for sub in subs))


def cgpo_settings(raw: Any, grader: dict[str, Any] | None) -> dict[str, Any] | None:
    """`rlguard.cgpo`: `{"constraints": {SUB_GRADER: PASS_THRESHOLD}, "optimizer": "crpg"}`,
    constraints naming sub-graders of the job's multigrader (CGPO's judges)."""
    if raw is None:
        return None
    at = "rlguard.cgpo"
    if grader is None or grader.get("type") != "multi" or not isinstance(raw, dict):
        raise _refuse(at, "an object, for a reinforcement job whose grader is a multi")
    unknown = set(raw) - {"constraints", "optimizer"}
    if unknown:
        raise _refuse(f"{at}.{sorted(unknown)[0]}", "unknown field (constraints, optimizer)")
    optimizer = raw.get("optimizer", "crpg")
    if optimizer not in CGPO_OPTIMIZERS:
        message = f"one of {', '.join(CGPO_OPTIMIZERS)} (got {optimizer!r})"
        raise _refuse(f"{at}.optimizer", message)
    constraints = raw.get("constraints")
    if not isinstance(constraints, dict) or not constraints:
        raise _refuse(f"{at}.constraints", "an object of sub-grader names and pass thresholds")
    for name, bar in constraints.items():
        if name not in grader["graders"]:
            raise _refuse(f"{at}.constraints.{name}", f"the grader has no sub-grader {name!r}")
        if isinstance(bar, bool) or not isinstance(bar, int | float) or not math.isfinite(bar):
            raise _refuse(f"{at}.constraints.{name}", f"a pass threshold (got {bar!r})")
    return {"optimizer": optimizer, "constraints": constraints}


def extension_fields(body: FineTuningJobCreate) -> dict[str, Any]:
    """The `rlguard` object's job fields (the plan's own are not); unknown ones refused."""
    extension = {k: v for k, v in (body.rlguard or {}).items() if k not in PLAN_FIELDS}
    for name in extension:
        if name not in EXTENSION_FIELDS:
            known = ", ".join((*EXTENSION_FIELDS, *PLAN_FIELDS))
            raise _refuse(f"rlguard.{name}", f"unknown field (one of {known})")
    return extension
