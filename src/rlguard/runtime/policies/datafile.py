"""Read a user's YAML or JSON mapping, or a CSV of rows, into validated objects; every failure
names the file (and a CSV's line)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from rlguard.errors import InputError

T = TypeVar("T")


def read_mapping(path: Path | str, text: str | None = None) -> dict[str, Any]:
    """The top-level mapping of a .json file, or of YAML (a superset of JSON) otherwise."""
    where = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"{where}: cannot read: {e.strerror or e}") from None
    try:
        raw = json.loads(text) if where.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise InputError(
            f"{where}: not valid {'JSON' if where.endswith('.json') else 'YAML'}: "
            f"{' '.join(str(e).split())}"
        ) from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a mapping of field: value at the top level")
    return raw


def build(factory: Callable[..., T], fields: dict[str, Any], where: str) -> T:
    """`factory(**fields)`; a pydantic validation error becomes `where: field 'F': msg (got V)`,
    or `where: msg` when the rule spans fields."""
    try:
        return factory(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        message = err["msg"].removeprefix("Value error, ")
        if not err["loc"]:
            raise InputError(f"{where}: {message}") from None
        field = ".".join(str(p) for p in err["loc"])
        raise InputError(
            f"{where}: field '{field}': {message} (got {err['input']!r:.80})"
        ) from None


def read_csv_rows(
    factory: Callable[..., T], path: Path | None, shipped: Traversable, name: str
) -> list[T]:
    """Each row of the file at `path`, or of the package's `shipped` CSV (`name` in errors), as
    `factory(**cells)`; a blank cell is left out, as a value the source does not give."""
    where = str(path or name)
    try:
        text = Path(path).read_text(encoding="utf-8") if path else shipped.read_text("utf-8")
    except OSError as e:
        raise InputError(f"{where}: cannot read: {e.strerror or e}") from None
    reader = csv.DictReader(text.splitlines())
    return [build(factory, _cells(row), f"{where}:{reader.line_num}") for row in reader]


def _cells(row: dict[str, str | None]) -> dict[str, str]:
    return {k: v.strip() for k, v in row.items() if k is not None and v and v.strip()}
