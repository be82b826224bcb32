"""Reward models and CGPO's calibrated reward.

A reward model is anything that maps (prompts, completions) to one float each: an HF sequence
classifier (the usual trained RM) or a Python callable. CGPO calibrates it per prompt against a
baseline response a_bar: R_calib(s, a) = sigmoid(r(s, a) - r(s, a_bar)), so R_calib(s, a_bar) = 0.5
and rewards are comparable across prompts and tasks.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from rlguard.errors import InputError
from rlguard.train.config import RewardSpec

RewardFunction = Callable[..., Sequence[float] | torch.Tensor]
"""(prompts, completions) -> one float each; with a `metadata` parameter, each prompt's too."""


def calibrated(reward: torch.Tensor, baseline_reward: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(reward - baseline_reward)


class ClassifierReward:
    """An HF sequence classifier with one output: r(s, a) = logit of prompt + completion."""

    def __init__(
        self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, batch_size: int = 16
    ) -> None:
        self.model = model.eval().requires_grad_(False)
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(
        cls, path: str, device: torch.device | None = None, batch_size: int | None = None
    ) -> ClassifierReward:
        tokenizer = AutoTokenizer.from_pretrained(path)
        tokenizer.padding_side = "right"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1)
        model.config.pad_token_id = tokenizer.pad_token_id
        return cls(model.to(device or "cpu"), tokenizer, batch_size or 16)

    @torch.no_grad()
    def __call__(self, prompts: Sequence[str], completions: Sequence[str]) -> torch.Tensor:
        """One score per pair, on the model's device (the caller moves them once, to where they
        are used)."""
        scores = []
        for start in range(0, len(prompts), self.batch_size):
            texts = [
                p + c
                for p, c in zip(
                    prompts[start : start + self.batch_size],
                    completions[start : start + self.batch_size],
                    strict=True,
                )
            ]
            batch = self.tokenizer(texts, return_tensors="pt", padding=True).to(self.model.device)
            scores.append(self.model(**batch).logits[:, 0].float())
        return torch.cat(scores)


def load_callable(reference: str, where: str) -> RewardFunction:
    """'package.module:function' or 'path/to/file.py:function'."""
    target, _, name = reference.rpartition(":")
    if not target or not name:
        expected = "'module:function' or 'file.py:function'"
        raise InputError(f"{where}: expected {expected}, got {reference!r}")
    try:
        if target.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(target).stem, target)
            if spec is None or not Path(target).is_file():
                raise InputError(f"{where}: no such file {target}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            module = importlib.import_module(target)
    except ImportError as e:
        raise InputError(f"{where}: cannot import {target!r} ({e})") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise InputError(f"{where}: {target!r} has no function {name!r}")
    return function


def load_reward(
    spec: RewardSpec,
    where: str,
    device: torch.device | None = None,
    batch_size: int | None = None,
) -> RewardFunction:
    """A reward model (on `device`, scoring `batch_size` texts per forward) or a function."""
    if spec.model is not None:
        if not Path(spec.model).exists():
            raise InputError(f"{where}.model: no such model directory {spec.model}")
        return ClassifierReward.from_pretrained(spec.model, device, batch_size)
    function = load_callable(spec.function, f"{where}.function")  # type: ignore[arg-type]
    return functools.partial(function, **spec.options) if spec.options else function


def takes_metadata(reward: RewardFunction) -> bool:
    """Whether a reward function wants each prompt's metadata (a `metadata` parameter)."""
    try:
        return "metadata" in inspect.signature(reward).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def score(
    reward: RewardFunction,
    prompts: Sequence[str],
    completions: Sequence[str],
    device: torch.device | None = None,
    metadata: Sequence[dict[str, Any]] | None = None,
) -> torch.Tensor:
    """float32 scores on `device` (default: where the reward function left them); `metadata`,
    one per prompt, goes to a reward function that takes it."""
    if metadata is not None and takes_metadata(reward):
        scores = reward(list(prompts), list(completions), metadata=list(metadata))
    else:
        scores = reward(list(prompts), list(completions))
    return torch.as_tensor(scores, dtype=torch.float32, device=device)
