"""Validation of IFEval kwargs: a malformed kwarg is a judge failure (-1), never a violation.

Malformed includes every value for which IFEval would draw a random one instead (a count below 1,
since its evaluation drops falsy kwargs; a letter outside a-z; an nth paragraph beyond the count)
or crash (an unknown relation or language, a keyword that is not a valid regex).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

LESS_THAN = "less than"
AT_LEAST = "at least"


class BadKwargs(ValueError):
    """An instruction's kwargs are missing, unexpected or of the wrong type."""


def clean(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The kwargs an instruction takes: IFEval rows carry all instructions' keys, unused ones None.

    NaN counts as missing too, since pandas writes a missing number as NaN.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise BadKwargs(f"kwargs must be a mapping, got {type(raw).__name__}")
    return {k: v for k, v in raw.items() if not _missing(v)}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def count(value: Any, name: str) -> int:
    """A positive integer kwarg; integral floats pass because Arrow/pandas store nullable ints as
    floats."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise BadKwargs(f"{name} must be an integer, got {value!r}") from None
    if number < 1:
        raise BadKwargs(f"{name} must be at least 1, got {number}")
    return number


def text(value: Any, name: str, *, strip: bool = True) -> str:
    """A non-blank string kwarg, stripped where IFEval strips it."""
    if not isinstance(value, str) or not value.strip():
        raise BadKwargs(f"{name} must be a non-empty string, got {value!r}")
    return value.strip() if strip else value


def texts(value: Any, name: str) -> list[str]:
    """A non-empty list of non-blank strings, unstripped as IFEval takes them (a bare string would
    be checked letter by letter)."""
    if isinstance(value, str) or not isinstance(value, list | tuple) or not value:
        raise BadKwargs(f"{name} must be a non-empty list of strings, got {value!r}")
    return [text(item, name, strip=False) for item in value]


def pattern(source: str, name: str, flags: int = 0) -> re.Pattern[str]:
    """A regex made with a kwarg: IFEval pastes keywords and markers into patterns unescaped."""
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise BadKwargs(f"{name} is not a valid regular expression ({exc}): {source!r}") from None


@dataclass(frozen=True, slots=True)
class Threshold:
    """IFEval's two relations: "less than" is strict, "at least" is inclusive."""

    relation: str
    bound: int

    def holds(self, actual: int) -> bool:
        return actual < self.bound if self.relation == LESS_THAN else actual >= self.bound

    def __str__(self) -> str:
        return f"{self.relation} {self.bound}"


def threshold(relation: Any, bound: Any, relation_name: str, bound_name: str) -> Threshold:
    """The comparison an instruction asks for, from its relation and bound kwargs."""
    if relation not in (LESS_THAN, AT_LEAST):
        raise BadKwargs(f"{relation_name} must be {LESS_THAN!r} or {AT_LEAST!r}, got {relation!r}")
    return Threshold(relation, count(bound, bound_name))
