"""Option checks shared by the subcommands: each failure is one line naming the option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from rlguard.errors import InputError


def validated(model: type[BaseModel], **fields) -> BaseModel:  # type: ignore[no-untyped-def]
    """Build a config; a validation failure becomes a one-line error naming the option."""
    try:
        return model(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        loc = "--" + str(err["loc"][0]).replace("_", "-") if err["loc"] else "options"
        raise InputError(f"option {loc}: {err['msg']} (got {err['input']!r})") from None


def names(raw: str, known: list[str], option: str, allow_many: bool = True) -> list[str]:
    """Names from `all` or a comma list (or exactly one name), each checked against `known`."""
    if raw == "all" and allow_many:
        return list(known)
    names = [n.strip() for n in raw.split(",") if n.strip()] if allow_many else [raw]
    choices = ", ".join(known) + (", all" if allow_many else "")
    for name in names:
        if name not in known:
            raise InputError(f"option {option}: unknown name {name!r} (choose from {choices})")
    return names


def policy_args(raw: str) -> dict[str, Any]:
    """A policy's knobs from `--policy-args`: a JSON object, `@FILE` (a JSON or YAML mapping), or
    `key=value,...` where each value is read as JSON when it parses (numbers, lists, null, true)
    and as a string otherwise; commas inside brackets belong to the value."""
    option = "option --policy-args"
    text = raw.strip()
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            parsed = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise InputError(f"{option}: {path}: {str(e).splitlines()[0]}") from None
        where = f"{option}: {path}"
    elif text.startswith("{") or not text:
        try:
            parsed = json.loads(text or "{}")
        except json.JSONDecodeError as e:
            raise InputError(f"{option}: not JSON ({e})") from None
        where = option
    else:
        parsed, where = dict(_pair(item, option) for item in _split_top_level(text)), option
    if not isinstance(parsed, dict):
        raise InputError(f"{where}: expected a mapping of knobs (got {parsed!r})")
    return parsed


def _pair(item: str, option: str) -> tuple[str, Any]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise InputError(f"{option}: expected key=value (got {item!r})")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value.strip()


def _split_top_level(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item for item in items if item.strip()]


def per_base(knobs: dict[str, Any], bases: list[str]) -> dict[str, dict[str, Any]]:
    """Knobs for each base: `{"tiresias": {...}, ...}` names them per base (only bases being
    run); any other mapping gives the same knobs to every base (one base, usually)."""
    if knobs and all(isinstance(v, dict) for v in knobs.values()):
        extra = [name for name in knobs if name not in bases]
        if extra:
            raise InputError(
                f"option --policy-args: knobs for {extra[0]!r}, which is not among the bases "
                f"run ({', '.join(bases)})"
            )
        return {name: knobs.get(name, {}) for name in bases}
    return {name: knobs for name in bases}
