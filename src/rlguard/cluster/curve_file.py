"""The curve file: eval curves measured in real training, in a JSON format the simulator replays.

The lab writes one per experiment (`write_curves`); `rlguard simulate --curves FILE` makes every
RLHF job follow a curve drawn from it (`read_curves`). One JSON object, format "rlguard-curves/1":

    {"format": "rlguard-curves/1", "source": "<what produced it>",
     "curves": [{"name": "ppo/seed0", "method": "ppo", "seed": 0,
                 "progress": [0.0, 0.05, ...], "score": [...],
                 "proxy": [...], "kl": [...], "hacking": true}]}

docs/cluster.md ("Replaying measured curves") defines every field. Reading is strict, and the
writer checks what it writes the same way: every problem is one InputError line naming the file,
the field path and the bad value, e.g. ``run.json: curves[3].score[7]: Input should be less than
or equal to 1 (got 1.2)``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlguard.cluster.curves import MeasuredCurve
from rlguard.errors import InputError
from rlguard.io import write_json

FORMAT = "rlguard-curves/1"

Finite = Annotated[float, Field(allow_inf_nan=False)]
UnitScore = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class _Entry(BaseModel):
    """One curve as stored. Strict: no strings for numbers, no booleans for seeds, no extra keys
    (a misspelt optional field would otherwise be dropped without a word)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1)
    method: str = Field(min_length=1)
    seed: int
    progress: list[UnitScore] = Field(min_length=2)
    score: list[UnitScore]
    proxy: list[Finite] | None = None
    kl: list[Finite] | None = None
    hacking: bool | None = None


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    format: Literal["rlguard-curves/1"]
    source: str
    curves: list[_Entry] = Field(min_length=1)


@dataclass(frozen=True)
class CurveFile:
    """A read curve file: what produced it and its curves, in file order."""

    source: str
    curves: tuple[MeasuredCurve, ...]


def _field_path(loc: tuple[int | str, ...]) -> str:
    """Pydantic's ('curves', 3, 'score', 7) as `curves[3].score[7]`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "top level"


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_series(entries: Sequence[_Entry], where: str) -> None:
    """What field types cannot say: unique names, increasing progress, one value per point."""
    first: dict[str, int] = {}
    for i, entry in enumerate(entries):
        at = f"{where}: curves[{i}]"
        if entry.name in first:
            raise InputError(
                f"{at}.name: duplicate name {entry.name!r} (first at curves[{first[entry.name]}])"
            )
        first[entry.name] = i
        progress = entry.progress
        for j in range(1, len(progress)):
            if progress[j] <= progress[j - 1]:
                raise InputError(
                    f"{at}.progress[{j}]: not strictly increasing "
                    f"(got {progress[j]!r} after {progress[j - 1]!r})"
                )
        for name in ("score", "proxy", "kl"):
            values = getattr(entry, name)
            if values is not None and len(values) != len(progress):
                raise InputError(
                    f"{at}.{name}: length does not match progress "
                    f"(got {len(values)} values for {len(progress)} points)"
                )


def parse_curves(document: object, where: str) -> CurveFile:
    """Validate a decoded curve file into measured curves; `where` names the file in errors."""
    try:
        parsed = _Document.model_validate(document)
    except ValidationError as e:
        err = e.errors()[0]
        got = "" if err["type"] == "missing" else f" (got {_shown(err['input'])})"
        raise InputError(f"{where}: {_field_path(err['loc'])}: {err['msg']}{got}") from None
    _check_series(parsed.curves, where)
    curves = tuple(MeasuredCurve(**entry.model_dump()) for entry in parsed.curves)
    return CurveFile(parsed.source, curves)


def read_curves(path: str | os.PathLike[str]) -> CurveFile:
    """Read and validate a curve file (UTF-8 JSON, optional BOM)."""
    where = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"{where}: cannot read curve file: {e.strerror or e}") from None
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise InputError(f"{where}: not UTF-8 text (byte 0x{data[e.start]:02x})") from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    return parse_curves(document, where)


def _entry(curve: MeasuredCurve) -> dict[str, object]:
    """A curve as stored: sequences as lists, unset optional fields left out."""
    fields = asdict(curve)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items() if v is not None}


def write_curves(
    path: str | os.PathLike[str], curves: Sequence[MeasuredCurve], source: str
) -> None:
    """Write a curve file atomically, after checking it as `read_curves` will."""
    document = {"format": FORMAT, "source": source, "curves": [_entry(c) for c in curves]}
    parse_curves(document, os.fspath(path))
    write_json(Path(path), document)
