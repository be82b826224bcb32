"""Framework presets as data: one YAML per framework (tag names and layouts read from its source).

A preset has `default_source`, `common` fields and one section per source it writes
(`sources: {tensorboard: {...}, jsonl: {...}}`). `preset_fields(name, source)` merges them; the
watch spec's own fields go on top.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

PRESETS = ("verl", "trl", "transformers", "openrlhf", "nemo-rl")


@cache
def load_preset(name: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath(f"{name}.yaml").read_text()
    return yaml.safe_load(text)


def preset_fields(name: str, source: str | None) -> dict[str, Any]:
    preset = load_preset(name)
    source = source or preset["default_source"]
    sections = preset["sources"]
    if source not in sections:
        raise ValueError(
            f"preset {name!r} has no source {source!r}; it has {', '.join(sorted(sections))}"
        )
    return {"source": source} | preset.get("common", {}) | sections[source]
