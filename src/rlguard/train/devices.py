"""Where each model of a run lives: device names in configs, their resolution, and moving batches.

A config names devices as TRL users write them (`auto`, `cpu`, `cuda`, `cuda:N`, `mps`); `auto`
is CUDA when present, else the CPU. Names are checked when the config is parsed (so a typo is a
one-line error naming the field); whether the machine has that device is checked when the trainer
starts, so a config written for a GPU machine still validates on a laptop.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

import torch

from rlguard.errors import InputError

NAME = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def check_name(value: str) -> str:
    """A config validator: the name unchanged, or ValueError saying which names exist."""
    if not NAME.match(value):
        raise ValueError("a device is auto, cpu, cuda, cuda:N or mps")
    return value


def resolve(name: str, where: str) -> torch.device:
    """The torch device a config name means on this machine and in this process.

    `auto` and a bare `cuda` mean this process's GPU (LOCAL_RANK under `accelerate launch`, so
    each data-parallel process gets its own); InputError naming `where` if it is not there.
    """
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        name = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    device = torch.device(name)
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if device.index >= count:
            raise InputError(f"{where}: {name} is not available here ({count} CUDA devices)")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"{where}: mps is not available here")
    return device


def to_device(value: Any, device: torch.device) -> Any:
    """A tensor, or a dataclass of tensors (Rollouts, ScoredRollouts), on `device`; tensors
    already there are not copied."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        moved = {
            f.name: to_device(getattr(value, f.name), device) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **moved)
    return value
