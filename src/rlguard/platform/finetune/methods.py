"""A fine-tuning job's `method` (supervised, dpo, reinforcement), its `auto` hyperparameters
resolved, and the `rlguard train` stage config that runs it.

`auto` is resolved as OpenAI describes it, from the training file's size: n_epochs 3 (1 for
reinforcement), batch_size about 0.2% of the examples within 1..8 (OpenAI: up to 256; these
runs are on the tenant's own GPUs), learning_rate_multiplier 1 of each stage's base rate,
dpo's beta 0.1, reinforcement's eval_interval a tenth of the steps and compute_multiplier 1
(4 samples per prompt). The resolved values are stored and reported in the job's object.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlguard.platform.errors import ApiError

SUPERVISED, DPO, REINFORCEMENT = "supervised", "dpo", "reinforcement"
METHODS = (SUPERVISED, DPO, REINFORCEMENT)
BASE_LEARNING_RATE = {SUPERVISED: 1e-4, DPO: 1e-5, REINFORCEMENT: 1e-5}
SAMPLES_PER_PROMPT = 4  # at compute_multiplier 1
STAGE = {SUPERVISED: "sft", DPO: "dpo", REINFORCEMENT: "cgpo"}
JOB_KIND = {SUPERVISED: "sft", DPO: "dpo", REINFORCEMENT: "rlhf"}
GRADER_REWARD = "rlguard.judges.graders.reward:grade"  # the grader's file as the reward
Auto = Literal["auto"]


class Hyperparameters(BaseModel):
    """OpenAI's, for every method; each field `auto` or a value. Fields that OpenAI defines and
    rlguard does not act on are refused rather than ignored."""

    model_config = ConfigDict(extra="forbid")

    n_epochs: Auto | int = Field("auto", description="1..50")
    batch_size: Auto | int = "auto"
    learning_rate_multiplier: Auto | float = "auto"
    beta: Auto | float = "auto"  # dpo
    eval_interval: Auto | int = "auto"  # reinforcement
    eval_samples: Auto | int = "auto"  # reinforcement
    compute_multiplier: Auto | float = "auto"  # reinforcement
    reasoning_effort: Literal["default"] = "default"  # reinforcement: no reasoning models here


ONLY = {
    "beta": (DPO,),
    "eval_interval": (REINFORCEMENT,),
    "eval_samples": (REINFORCEMENT,),
    "compute_multiplier": (REINFORCEMENT,),
}
BOUNDS = {
    "n_epochs": (1, 50),
    "batch_size": (1, 256),
    "learning_rate_multiplier": (1e-6, 1e3),
    "beta": (1e-6, 2.0),
    "eval_interval": (1, 10_000),
    "eval_samples": (1, 16),
    "compute_multiplier": (0.25, 4.0),
}


def parse_hyperparameters(method: str, raw: dict[str, Any], at: str) -> Hyperparameters:
    try:
        given = Hyperparameters.model_validate(raw)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        field = ".".join(str(p) for p in err["loc"][:1])
        message = f"{at}.{field}: {err['msg']}"
        raise ApiError(400, message, "invalid_value", f"{at}.{field}") from None
    for name in given.model_fields_set:
        value = getattr(given, name)
        if name in ONLY and method not in ONLY[name]:
            message = f"{at}.{name}: only for {', '.join(ONLY[name])} jobs"
            raise ApiError(400, message, "invalid_value", f"{at}.{name}")
        low, high = BOUNDS.get(name, (None, None))
        if value != "auto" and low is not None and not low <= value <= high:
            message = f"{at}.{name}: must be within {low}..{high} (got {value})"
            raise ApiError(400, message, "invalid_value", f"{at}.{name}")
    return given


def resolve(method: str, given: Hyperparameters, examples: int) -> dict[str, Any]:
    """Every `auto` of `method` as a value, from the training file's `examples`."""

    def pick(name: str, auto: Any) -> Any:
        value = getattr(given, name)
        return auto if value == "auto" else value

    batch = pick("batch_size", min(8, max(1, round(examples * 0.002))))
    epochs = pick("n_epochs", 1 if method == REINFORCEMENT else 3)
    resolved = {
        "n_epochs": epochs,
        "batch_size": batch,
        "learning_rate_multiplier": pick("learning_rate_multiplier", 1.0),
    }
    if method == DPO:
        resolved["beta"] = pick("beta", 0.1)
    if method == REINFORCEMENT:
        steps = total_steps(resolved, examples)
        resolved["eval_interval"] = pick("eval_interval", max(1, steps // 10))
        resolved["eval_samples"] = pick("eval_samples", 1)
        resolved["compute_multiplier"] = pick("compute_multiplier", 1.0)
        resolved["reasoning_effort"] = given.reasoning_effort
    return resolved


def total_steps(hp: dict[str, Any], examples: int) -> int:
    """A reinforcement job's steps: its epochs of batches over the training file."""
    return hp["n_epochs"] * math.ceil(examples / hp["batch_size"])


def stage_config(
    method: str,
    hp: dict[str, Any],
    model_dir: str,
    examples: int,
    validation_examples: int,
    seed: int,
    max_new_tokens: int,
    cgpo: dict[str, Any] | None = None,
    sub_graders: Sequence[str] = (),
) -> dict[str, Any]:
    """The `rlguard train` config, its paths relative to the job's directory, where the job
    renders its files (rlguard.train.chat_data) and the platform sets `output_dir`. `cgpo`
    (reinforcement): `{"optimizer", "constraints": {sub-grader: pass_threshold}}`, each
    constraint one of CGPO's judges (rlguard.judges.graders.judge), else GRPO. `sub_graders`
    (a multigrader's): each one's score is logged at each step and eval, never trained on."""
    lr = BASE_LEARNING_RATE[method] * hp["learning_rate_multiplier"]
    model = {"path": model_dir}
    if method != REINFORCEMENT:
        config = {
            "stage": STAGE[method],
            "output_dir": "output",
            "model": model,
            "data": "data/train.jsonl",
            "epochs": hp["n_epochs"],
            "batch_size": hp["batch_size"],
            "learning_rate": lr,
            "seed": seed,
        }
        return {**config, "beta": hp["beta"]} if method == DPO else config
    grader = {"function": GRADER_REWARD, "options": {"grader": "grader.json"}}
    scores = {
        sub: {"function": GRADER_REWARD, "options": {"grader": "grader.json", "sub_grader": sub}}
        for sub in sub_graders
    }
    task = {
        "name": "grader",
        "prompts": "data/train.jsonl",
        "eval_prompts": "data/valid.jsonl",
        "reward": grader,
        "gold": grader,  # the eval score: the grader's reward on the validation file
        "optimizer": "grpo" if cgpo is None else cgpo["optimizer"],
        "judges": [
            {"name": "grader", "grader": "grader.json", "sub_grader": sub, "pass_threshold": bar}
            for sub, bar in (cgpo or {}).get("constraints", {}).items()
        ],
        "scores": scores,
        "k": max(2, round(SAMPLES_PER_PROMPT * hp["compute_multiplier"])),
        "batch_size": hp["batch_size"],
        "max_new_tokens": max_new_tokens,
        "baseline": "reference",
    }
    return {
        "stage": "cgpo",
        "output_dir": "output",
        "policy": model,
        "tasks": [task],
        "steps": total_steps(hp, examples),
        "learning_rate": lr,
        "eval_every": hp["eval_interval"],
        "save_every": hp["eval_interval"],
        "eval_prompts": validation_examples,
        "eval_samples": hp["eval_samples"],
        "eval_temperature": 1.0,
        "seed": seed,
        "tensorboard": False,
    }
