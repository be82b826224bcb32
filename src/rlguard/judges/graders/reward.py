"""An OpenAI grader as a training reward: `reward: {function: "rlguard.judges.graders.reward:
grade", options: {grader: grader.json}}` in a task's config, each prompt's metadata the item.
The file holds the grader's JSON, or `{"grader": ..., "models": {name: directory}}` naming the
local Hugging Face models its score_model graders run on (in the job's process).

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
from rlguard.judges.graders.base import Grade, GraderError
from rlguard.judges.graders.multi import MultiGrader
from rlguard.judges.graders.parse import AnyGrader, parse_grader
from rlguard.judges.graders.score_model import LocalModels
from rlguard.judges.graders.templates import sample_of


@functools.cache
def load_grader(path: str) -> AnyGrader:
    """The grader in a JSON file, parsed once per process."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read a grader ({e})") from None
    models = {}
    if isinstance(data, dict) and "type" not in data:  # the grader and its models
        data, models = data.get("grader"), data.get("models") or {}
    try:
        return parse_grader(data, models=LocalModels(models))
    except GraderError as e:
        raise InputError(f"{path}: {e.message}") from None


def grade(
    prompts: Sequence[str],
    completions: Sequence[str],
    metadata: Sequence[dict[str, Any]],
    grader: str,
    sub_grader: str | None = None,
) -> list[float]:
    """One reward per completion: the grader on (the sample, its prompt's item), or the score
    of its sub-grader `sub_grader` (a training task's side score, read from the same grade)."""
    if sub_grader is not None:
        whole = load_grader(grader)
        if not isinstance(whole, MultiGrader) or sub_grader not in whole.graders:
            raise InputError(f"{grader}: the grader has no sub-grader {sub_grader!r}")
    rewards = []
    for completion, item in zip(completions, metadata, strict=True):
        try:
            graded = _graded(grader, completion, json.dumps(item, sort_keys=True))
        except GraderError as e:
            print(f"grader error (reward 0): {e.message}", file=sys.stderr)
            rewards.append(0.0)
            continue
        if graded.errors and sub_grader is None:
            print(f"grader error (reward {graded.reward}): {graded.errors}", file=sys.stderr)
        rewards.append(graded.reward if sub_grader is None else graded.sub_rewards[sub_grader])
    return rewards


@functools.lru_cache(maxsize=4096)
def _graded(grader: str, completion: str, item: str) -> Grade:
    """A sample's grade, kept a while: a step scores each sample for its reward and then for
    each sub-grader's side score, and grades it once (a model grader or the sandbox is slow)."""
    return load_grader(grader).grade(sample_of(completion), json.loads(item))
