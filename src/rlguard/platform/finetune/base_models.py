"""Base models the operator registers (`rlguard serve --model NAME=PATH`): Hugging Face model
directories a fine-tuning job starts from and `/v1/models` lists, as OpenAI lists its own.

Each is also a read-only root of every tenant's job view (mounts.py), at its own path, so a job
reads the weights where the operator keeps them. A name is what a tenant writes as `model`;
it has no colon (a fine-tuned model's name, `ft:BASE:TENANT:SUFFIX:ID`, is built of colons).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from rlguard.errors import InputError
from rlguard.platform.mounts import Mount, parse_mount

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
OWNER = "rlguard"


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    path: str  # absolute, symlinks resolved
    created: int  # the directory's modification time, as OpenAI's `created`

    def as_mount(self) -> Mount:
        return Mount(f"model-{self.name}", self.path, None)

    def view(self) -> dict[str, Any]:
        return {"id": self.name, "object": "model", "created": self.created, "owned_by": OWNER}


def parse_model(raw: str) -> RegisteredModel:
    """`--model NAME=PATH`: InputError naming the option and the value."""
    name, sep, path = raw.partition("=")
    where = f"option --model: {raw!r}"
    if not sep or not NAME.match(name):
        raise InputError(f"{where}: expected NAME=PATH, NAME of letters, digits, '.', '_', '-'")
    try:
        mount = parse_mount(f"{name}={path}:ro")
    except InputError as e:
        raise InputError(f"{where}: {str(e).split(': ', 2)[-1]}") from None
    if not os.path.isfile(os.path.join(mount.path, "config.json")):
        raise InputError(f"{where}: {mount.path} holds no config.json (a Hugging Face model)")
    return RegisteredModel(name, mount.path, int(os.stat(mount.path).st_mtime))


def check_unique(models: list[RegisteredModel]) -> dict[str, RegisteredModel]:
    found: dict[str, RegisteredModel] = {}
    for model in models:
        if model.name in found:
            raise InputError(f"option --model: {model.name!r} is registered twice")
        found[model.name] = model
    return found
