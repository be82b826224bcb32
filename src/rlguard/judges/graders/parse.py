"""A request's grader, parsed into its model (by `type`), or a GraderError naming the first bad
field as the request spells it (`grader.graders.exact.operation`) and the value given."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from rlguard.errors import shown
from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.multi import MultiGrader, SubGrader
from rlguard.judges.graders.score_model import ScoringModels

AnyGrader = Annotated[SubGrader | MultiGrader, Field(discriminator="type")]
_ADAPTER: TypeAdapter[AnyGrader] = TypeAdapter(AnyGrader)


def parse_grader(data: Any, at: str = "grader", models: ScoringModels | None = None) -> AnyGrader:
    """`models`: those a score_model grader may use here (none: such a grader is refused)."""
    try:
        return _ADAPTER.validate_python(data, context={"models": models})
    except ValidationError as e:
        raise _refusal(e.errors(include_url=False)[0], data, at) from None


def _refusal(err: Any, data: Any, at: str) -> GraderError:
    fields = _fields(err["loc"], data)
    message = err["msg"].removeprefix("Value error, ")
    got = "" if err["type"] == "missing" else f" (got {shown(err.get('input'))})"
    if err["type"] == "union_tag_invalid":  # the type is the field at fault, not the grader
        fields.append("type")
        message = f"unknown grader type (one of {err['ctx']['expected_tags']})"
        got = f" (got {shown(err['ctx']['tag'])})"
    elif err["type"] == "union_tag_not_found":
        fields.append("type")
        message, got = "Field required", ""
    param = ".".join([at, *fields])
    return GraderError(f"{param}: {message}{got}", param)


def _fields(loc: tuple[int | str, ...], data: Any) -> list[str]:
    """The error's location as the request's own fields: pydantic puts the union's tag (a
    grader's `type`) in the location, which the request does not have as a key."""
    fields, here = [], data
    for part in loc:
        if isinstance(here, dict) and part not in here and here.get("type") == part:
            continue
        fields.append(str(part))
        here = here.get(part) if isinstance(here, dict) else None
    return fields
