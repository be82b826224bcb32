"""Mixed precision as accelerate does it: fp32 weights and optimizer state, forwards in bf16/fp16.

Weights stay float32 (the master copy AdamW updates, so its state is float32 too); each forward
runs under `torch.autocast`, which computes matmuls in the low precision and keeps reductions,
softmax and losses in float32. fp16's narrow range underflows small gradients, so it also scales
the loss (GradScaler: dynamic scale, steps with inf/nan gradients skipped); bf16 needs no scale.
"""

from __future__ import annotations

from types import MethodType
from typing import Any

import torch
from torch import nn

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def autocast_forward(model: nn.Module, mode: str) -> None:
    """Every forward of `model` (training, no-grad passes, `generate`) under autocast on the
    model's device, as accelerate's `prepare` wraps a model; backward stays outside autocast.

    The wrapper is a bound method, so a deep copy of the model wraps the copy's own forward."""
    if mode == "no":
        return
    device_type = next(model.parameters()).device.type
    dtype = DTYPES[mode]
    forward = type(model).forward

    def autocast(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        with torch.autocast(device_type, dtype=dtype):
            return forward(self, *args, **kwargs)

    model.forward = MethodType(autocast, model)


class LossScale:
    """fp16's GradScaler around backward and the optimizer step; plain calls otherwise."""

    def __init__(self, mode: str, device: torch.device) -> None:
        self.scaler = torch.amp.GradScaler(device.type) if mode == "fp16" else None

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Gradients in true units (before clipping them)."""
        if self.scaler:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.scaler:
            self.scaler.step(optimizer)  # skipped when a gradient is inf/nan
            self.scaler.update()
        else:
            optimizer.step()

    def state_dict(self) -> dict[str, Any]:
        return self.scaler.state_dict() if self.scaler else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.scaler and state:
            self.scaler.load_state_dict(state)
