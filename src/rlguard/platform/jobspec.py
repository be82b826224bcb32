"""From a validated submission to what runs: the job's kind, its command line and its files.

A train job is any `rlguard train` stage config, validated here with the CLI's own parser (so
the API answers with the CLI's one-line field messages) and run as `rlguard train` on a copy
whose `output_dir` is the job's own directory; every path it reads must be absolute and inside
the job's view (mounts.py). Both kinds run in the job's directory.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlguard.errors import InputError
from rlguard.platform.jobfiles import OUTPUT
from rlguard.platform.schemas import JobCreate

STAGE_KINDS = {"cgpo": "rlhf", "sft": "sft", "reward": "reward", "dpo": "dpo"}


@dataclass(frozen=True)
class Admitted:
    kind: str  # train | command
    job_kind: str  # what stop rules see
    spec: dict[str, Any]  # the body to store (train configs with output_dir set)


def admit_spec(
    body: JobCreate, job_dir: Path, vet_paths: Callable[[list[tuple[str, str]]], None]
) -> Admitted:
    """Validate a submission; InputError names the field (`config.tasks.0.k: ...`). A train
    config's paths go through `vet_paths` (the job's view) before anything touches them."""
    spec = body.model_dump(mode="json")
    if body.command is not None:
        return Admitted("command", body.kind or "rlhf", spec)
    from rlguard.train.stages import parse_stage

    config = {**body.config, "output_dir": str(job_dir / OUTPUT)}  # type: ignore[dict-item]
    stage, _ = parse_stage(config, "config", vet_paths)
    spec["config"] = config
    return Admitted("train", STAGE_KINDS[stage], spec)


def argv(kind: str, spec: dict[str, Any], config: Path) -> list[str]:
    """The run's command line; a train job's reads its config at `config` (written on its node
    by `jobfiles.write_config`)."""
    if kind == "command":
        return ["bash", "-c", spec["command"]]
    return [sys.executable, "-m", "rlguard.cli", "train", str(config), "--no-progress"]


def input_error_field(error: InputError) -> tuple[str, str]:
    """(param, message) of a config error `config: tasks.0.k: ...` for the API's error body."""
    text = str(error)
    parts = text.split(": ", 2)
    param = ".".join(parts[:2]) if len(parts) == 3 else parts[0]
    return param, text
