"""Task prompts from JSONL or a local HF `datasets` dataset.

A row has a `prompt`, optionally a `reference` answer (CGPO's baseline a_bar) and its judges'
metadata: a `metadata` object, or else every other column (so IFEval rows, with their
`instruction_id_list` and `kwargs` columns, and math rows with an `answer` column work as they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlguard.errors import InputError
from rlguard.jsonl import field, read_jsonl


@dataclass(frozen=True)
class Prompts:
    texts: list[str]
    metadata: list[dict[str, Any]]
    references: list[str | None]

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, rows: list[int]) -> Prompts:
        return Prompts(
            [self.texts[i] for i in rows],
            [self.metadata[i] for i in rows],
            [self.references[i] for i in rows],
        )


def _split_row(row: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    reference = row.get("reference")
    if isinstance(row.get("metadata"), dict):
        return row["metadata"], reference
    return {k: v for k, v in row.items() if k not in ("prompt", "reference")}, reference


def _from_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, row in read_jsonl(path):
        field(path, number, row, "prompt", str)
        if row.get("reference") is not None:  # null, as datasets writes it, means none
            field(path, number, row, "reference", str)
        rows.append(row)
    return rows


def _from_datasets(path: Path, split: str) -> list[dict[str, Any]]:
    import datasets

    try:
        if path.is_dir():
            loaded = datasets.load_from_disk(str(path))
        else:
            kind = path.suffix.lstrip(".")
            loaded = datasets.load_dataset(kind, data_files=str(path), split="train")
    except (ValueError, OSError, IndexError) as e:
        # an empty or corrupt file, a directory that is no dataset, or (IndexError) a saved
        # dataset with no rows, which `load_from_disk` cannot load
        raise InputError(f"{path}: cannot load it as a dataset ({e})".replace("\n", " ")) from None
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise InputError(f"{path}: no split {split!r} (has {', '.join(loaded)})")
        loaded = loaded[split]
    if "prompt" not in loaded.column_names:
        raise InputError(f"{path}: no 'prompt' column (has {', '.join(loaded.column_names)})")
    rows = list(loaded)
    for number, row in enumerate(rows):
        for name, kinds in (("prompt", str), ("reference", (str, type(None)))):
            if not isinstance(row.get(name), kinds):
                got = f"{row.get(name)!r:.60}"
                raise InputError(f"{path}: row {number}: column {name!r} must be a str, got {got}")
    return rows


def load_prompts(source: str, split: str, where: str) -> Prompts:
    """Prompts from a .jsonl file, a saved `datasets` directory, or a .parquet/.json/.csv file."""
    path = Path(source)
    if not path.exists():
        raise InputError(f"{where}: no such file {source}")
    if path.suffix == ".jsonl":
        rows = _from_jsonl(path)
    elif path.is_dir() or path.suffix in (".parquet", ".json", ".csv"):
        rows = _from_datasets(path, split)
    else:
        raise InputError(f"{where}: expected .jsonl, .parquet, .json, .csv or a dataset directory")
    if not rows:
        raise InputError(f"{where}: {source} has no prompts")
    split_rows = [_split_row(row) for row in rows]
    return Prompts(
        [row["prompt"] for row in rows],
        [meta for meta, _ in split_rows],
        [ref for _, ref in split_rows],
    )
