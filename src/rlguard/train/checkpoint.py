"""Resumable checkpoints: weights in safetensors, optimizer state, and the loop's own state.

A checkpoint directory is written under a temporary name and renamed into place, so an interrupted
save leaves the previous checkpoint intact and never a half-written one. With LoRA only the adapter
is saved (the base weights never change). A sharded run (sharding.py) saves its models' whole
weights and optimizer state in the same files and layout, so any run, sharded or not and with any
number of processes, resumes from any checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import torch
from peft import PeftModel, get_peft_model_state_dict, set_peft_model_state_dict
from safetensors.torch import load_file, load_model, save_file, save_model
from torch import nn

from rlguard.io import write_json
from rlguard.train.sharding import UNSHARDED, Gathered, Sharding

STEP_DIR = re.compile(r"^step-(\d+)$")


class Stateful(Protocol):
    """Anything with torch's state_dict / load_state_dict (an fp16 GradScaler)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def _save_weights(model: nn.Module, path: Path) -> None:
    if isinstance(model, PeftModel):
        save_file(get_peft_model_state_dict(model), str(path))
    else:
        save_model(model, str(path))  # handles tied weights (embeddings shared with the LM head)


def _load_weights(model: nn.Module, path: Path) -> None:
    if isinstance(model, PeftModel):
        set_peft_model_state_dict(model, load_file(str(path)))
    else:
        load_model(model, str(path))


def _aliases(model: nn.Module) -> dict[str, str]:
    """Each tied weight's other names -> its first name (an LM head sharing the embeddings): a
    safetensors file holds each tensor once."""
    first: dict[int, str] = {}
    aliases = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if first.setdefault(id(p), name) != name:
            aliases[name] = first[id(p)]
    return aliases


def _save_whole(model: nn.Module, weights: dict[str, torch.Tensor], path: Path) -> None:
    aliases = _aliases(model)
    save_file({k: v for k, v in weights.items() if k not in aliases}, str(path))


def _load_whole(model: nn.Module, path: Path) -> dict[str, torch.Tensor]:
    weights = load_file(str(path))
    for alias, first in _aliases(model).items():  # either name may be the one saved
        weights[alias] = weights[first] = weights.get(first, weights.get(alias))
    return weights


def replace_dir(tmp: Path, final: Path) -> None:
    """Move a finished directory into place; the old one is removed only after the new one is
    complete."""
    if final.exists():
        old = final.with_name(f".old-{final.name}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old)
    else:
        os.replace(tmp, final)


def save_checkpoint(
    root: Path,
    step: int,
    models: dict[str, nn.Module],
    optimizer: torch.optim.Optimizer,
    state: dict[str, Any],
    others: Mapping[str, Stateful] | None = None,
    gathered: Gathered | None = None,
) -> Path:
    """`others`: more state (name -> object), each in `name.pt` when it has any; `gathered`: a
    sharded run's whole state, saved in place of the modules' and optimizer's own."""
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-step-{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, model in models.items():
        if gathered is not None:
            _save_whole(model, gathered.weights[name], tmp / f"{name}.safetensors")
        else:
            _save_weights(model, tmp / f"{name}.safetensors")
    optimizer_state = gathered.optimizer if gathered is not None else optimizer.state_dict()
    torch.save(optimizer_state, tmp / "optimizer.pt")
    for name, other in (others or {}).items():
        if other_state := other.state_dict():
            torch.save(other_state, tmp / f"{name}.pt")
    write_json(tmp / "trainer_state.json", {"step": step, **state})
    replace_dir(tmp, final)
    return final


def checkpoints(root: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints, oldest first."""
    if not root.is_dir():
        return []
    found = [
        (int(m.group(1)), p)
        for p in root.iterdir()
        if (m := STEP_DIR.match(p.name)) and (p / "trainer_state.json").is_file()
    ]
    return sorted(found)


def load_checkpoint(
    path: Path,
    models: dict[str, nn.Module],
    optimizer: torch.optim.Optimizer,
    others: Mapping[str, Stateful] | None = None,
    sharding: Sharding = UNSHARDED,
) -> dict[str, Any]:
    """Every process calls it; a sharded one takes its shards of the main process's load."""
    for name, model in models.items():
        if sharding.on:
            sharding.load_model_state(model, _load_whole(model, path / f"{name}.safetensors"))
        else:
            _load_weights(model, path / f"{name}.safetensors")
    optimizer_state = torch.load(path / "optimizer.pt", weights_only=True)
    if sharding.on:
        sharding.load_optimizer_state(optimizer, optimizer_state)
    else:
        optimizer.load_state_dict(optimizer_state)
    for name, other in (others or {}).items():
        if (path / f"{name}.pt").is_file():
            other.load_state_dict(torch.load(path / f"{name}.pt", weights_only=True))
    return json.loads((path / "trainer_state.json").read_text())


def rotate(root: Path, keep: int) -> None:
    """Delete all but the newest `keep` checkpoints (the best model lives apart, in best/)."""
    for _, path in checkpoints(root)[:-keep]:
        shutil.rmtree(path)
