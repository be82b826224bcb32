"""An OpenAI grader as a training reward: `reward: {function: "rlguard.judges.graders.reward:
grade", options: {grader: grader.json}}` in a task's config, each prompt's metadata the item.

This is how a reinforcement fine-tuning job's grader becomes its reward (platform/finetune).
A grade that fails on one sample (a python grader raising, a template naming a field this item
lacks) scores 0, as OpenAI counts a grader error, and the run goes on; the grader itself was
validated when the job was created.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlguard.errors import InputError
from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.parse import AnyGrader, parse_grader
from rlguard.judges.graders.templates import sample_of


@functools.cache
def load_grader(path: str) -> AnyGrader:
    """The grader in a JSON file (`{"type": ..., ...}`), parsed once per process."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read a grader ({e})") from None
    try:
        return parse_grader(data)
    except GraderError as e:
        raise InputError(f"{path}: {e.message}") from None


def grade(
    prompts: Sequence[str],
    completions: Sequence[str],
    metadata: Sequence[dict[str, Any]],
    grader: str,
) -> list[float]:
    """One reward per completion: the grader on (the sample, its prompt's item)."""
    model = load_grader(grader)
    rewards = []
    for completion, item in zip(completions, metadata, strict=True):
        try:
            rewards.append(model.grade(sample_of(completion), item).reward)
        except GraderError as e:
            print(f"grader error (reward 0): {e.message}", file=sys.stderr)
            rewards.append(0.0)
    return rewards
