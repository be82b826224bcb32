"""From a validated submission to what runs: the job's kind, its command line and its files.

A train job is any `rlguard train` stage config, validated here with the CLI's own parser (so
the API answers with the CLI's one-line field messages) and run as `rlguard train` on a copy
whose `output_dir` is the job's own directory, from the server's working directory (relative
paths in a config mean what they mean to `rlguard train` run there). A command job runs its shell
command in the job's directory.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlguard.errors import InputError
from rlguard.io import write_text
from rlguard.platform.schemas import JobCreate

STAGE_KINDS = {"cgpo": "rlhf", "sft": "sft", "reward": "reward", "dpo": "dpo"}
OUTPUT = "output"


@dataclass(frozen=True)
class Admitted:
    kind: str  # train | command
    job_kind: str  # what stop rules see
    spec: dict[str, Any]  # the body to store (train configs with output_dir set)


def admit_spec(body: JobCreate, job_dir: Path) -> Admitted:
    """Validate a submission; InputError names the field (`config.tasks.0.k: ...`)."""
    spec = body.model_dump(mode="json")
    if body.command is not None:
        return Admitted("command", body.kind or "rlhf", spec)
    from rlguard.train.stages import parse_stage

    config = {**body.config, "output_dir": str(job_dir / OUTPUT)}  # type: ignore[dict-item]
    stage, _ = parse_stage(config, "config")
    spec["config"] = config
    return Admitted("train", STAGE_KINDS[stage], spec)


def argv(kind: str, spec: dict[str, Any], job_dir: Path) -> list[str]:
    """The run's command line; a train job's config is written beside it."""
    if kind == "command":
        return ["bash", "-c", spec["command"]]
    config = job_dir / "config.yaml"
    if not config.is_file():
        write_text(config, yaml.safe_dump(spec["config"], sort_keys=False))
    return [sys.executable, "-m", "rlguard.cli", "train", str(config), "--no-progress"]


def input_error_field(error: InputError) -> tuple[str, str]:
    """(param, message) of a config error `config: tasks.0.k: ...` for the API's error body."""
    text = str(error)
    parts = text.split(": ", 2)
    param = ".".join(parts[:2]) if len(parts) == 3 else parts[0]
    return param, text
