"""Reading JSONL inputs with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlguard.errors import InputError


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; anything but a JSON object is an error."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{number}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{number}: expected a JSON object, got {row!r:.60}")
            yield number, row


def field(path: Path, number: int, row: dict[str, Any], name: str, kind: type, default=None):
    """row[name], checked to be a `kind`; missing uses `default` unless it is None."""
    if name not in row:
        if default is None:
            raise InputError(f"{path}:{number}: field {name!r} is missing")
        return default
    value = row[name]
    if not isinstance(value, kind):
        raise InputError(
            f"{path}:{number}: field {name!r} must be a {kind.__name__}, got {value!r:.60}"
        )
    return value
