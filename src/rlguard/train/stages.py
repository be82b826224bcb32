"""One parser for every stage's config, shared by `rlguard train` and the platform's admission.

A config's `stage` picks its model (cgpo when absent); the result is validated and every local
path it names is checked, with the one-line field messages of `rlguard.train.config`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rlguard.errors import InputError
from rlguard.train.config import CGPOConfig, check_paths, parse_config

STAGES = ("sft", "reward", "dpo", "cgpo")


def parse_stage(
    raw: dict[str, Any],
    source: Path | str,
    vet_paths: Callable[[list[tuple[str, str]]], None] | None = None,
) -> tuple[str, BaseModel]:
    """(stage, validated config) of a raw stage config; InputError naming source and field.
    `vet_paths` sees the config's local paths before anything checks they exist (the platform
    refuses paths outside a job's view without touching them)."""
    raw = dict(raw)
    stage = raw.pop("stage", "cgpo")
    if stage not in STAGES:
        raise InputError(
            f"{source}: stage: unknown stage {stage!r} (choose from {', '.join(STAGES)})"
        )
    if stage == "cgpo":
        config: BaseModel = parse_config(CGPOConfig, raw, source)
    else:
        from rlguard.train.offline import DPOConfig, RewardModelConfig, SFTConfig

        model = {"sft": SFTConfig, "reward": RewardModelConfig, "dpo": DPOConfig}[stage]
        config = parse_config(model, {**raw, "stage": stage}, source)
    if vet_paths is not None:
        vet_paths(config.local_paths())  # type: ignore[attr-defined]
    check_paths(config.local_paths(), source)  # type: ignore[attr-defined]
    return stage, config
