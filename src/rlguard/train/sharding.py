"""FSDP2 (`sharding: fsdp`): the trained models' weights, gradients and AdamW state split over
the data-parallel processes, each process holding 1/N of them between uses.

torch's `fully_shard` goes on each transformer block (the model's `_no_split_modules`, as
accelerate wraps them) and then on the whole model, for the policy and PPO's critic; the
reference and reward models are frozen and stay whole in every process. accelerate 1.15's FSDP
plugin cannot do it for us: it turns FSDP on only for accelerator devices (a CPU run stays
MULTI_CPU and ignores the plugin), and its `prepare` takes one model per optimizer, while PPO
trains the policy and critic under one AdamW. So `fully_shard` runs on the process group that
accelerate's launcher and `PartialState` set up.

Every forward and backward of a sharded model is a collective, so the processes run them in
lockstep:
- training: each task's micro-batches are padded to the most any process has (CRRAFT's and
  CODPO's selections differ per process) with zero-weight ones; gradients accumulate unreduced
  through a task's micro-batches and its last backward reduce-scatters them into the shards,
  summed (divide factor 1: the losses already carry whole-batch denominators), so once per update
  in a one-task run and once per task otherwise (the next task's gradients add to the shards);
- no-grad passes whose number differs per process (generation, the sampling pass, evaluation on
  the main process alone) run on the models gathered whole (`unshard`, kept through every forward)
  and resharded after, as verl gathers the weights for rollout; padding them would need to know
  every process's generation length in advance;
- checkpoints are full state dicts gathered to the main process, so they do not depend on the
  number of processes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard

from rlguard.train.distributed import DataParallel

GATHER = StateDictOptions(full_state_dict=True, cpu_offload=True)  # the whole on the main process
SCATTER = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)


@dataclass
class Gathered:
    """A sharded run's whole state, on the main process: each model's weights (by name) and the
    optimizer's state in `optimizer.state_dict()`'s layout."""

    weights: dict[str, dict[str, torch.Tensor]]
    optimizer: dict[str, Any]


class Sharding:
    """The trained models whole in every process (`none`, or a process that no launcher started:
    every method a pass-through), or FSDP-sharded over the launched processes (one included)."""

    def __init__(self, mode: str = "none", processes: DataParallel | None = None) -> None:
        self.on = mode == "fsdp" and processes is not None and processes.launched
        self.processes = processes
        self.models: list[nn.Module] = []

    def shard(self, models: Sequence[nn.Module]) -> None:
        """Shard `models` in place (before the optimizer is built on their parameters); every
        process must already hold the same weights."""
        if not self.on:
            return
        mesh = init_device_mesh(self.processes.device.type, (self.processes.size,))
        for model in models:
            blocks = set(getattr(model, "_no_split_modules", None) or [])
            for module in model.modules():
                if type(module).__name__ in blocks:
                    fully_shard(module, mesh=mesh, reshard_after_forward=True)
            fully_shard(model, mesh=mesh, reshard_after_forward=False)
            for module in self._fsdp(model):
                # summed, not averaged; SUM is also the one reduction gloo has
                module.set_gradient_divide_factor(1.0)
                module.set_force_sum_reduction_for_comms(True)
        self.models = list(models)

    @staticmethod
    def _fsdp(model: nn.Module) -> list[FSDPModule]:
        return [m for m in model.modules() if isinstance(m, FSDPModule)]

    def lockstep(self, count: int) -> int:
        """How many micro-batches this process runs: under FSDP the most any process has, and at
        least one (whose backward reduces the gradients)."""
        if not self.on:
            return count
        most = torch.tensor([count], device=self.processes.device)
        torch.distributed.all_reduce(most, op=torch.distributed.ReduceOp.MAX)
        return max(int(most.item()), 1)

    def reduce_in_backward(self, reduce: bool) -> None:
        """Whether the next backward reduce-scatters the accumulated gradients (a task's last)
        or only adds to them."""
        for model in self.models:
            model.set_requires_gradient_sync(reduce)

    @contextmanager
    def gathered(self) -> Iterator[None]:
        """The sharded models whole in every process, for forwards that need no collective (and
        so may differ in number, or run in one process). Every process must enter it."""
        # (module, its reshard_after_forward from `shard`: the blocks' True, the root's False)
        modules = [(m, m is not model) for model in self.models for m in self._fsdp(model)]
        for module, _ in modules:
            module.set_reshard_after_forward(False, recurse=False)
            module.unshard()
        try:
            yield
        finally:
            for module, reshard_after_forward in modules:
                module.reshard()
                module.set_reshard_after_forward(reshard_after_forward, recurse=False)

    def gather(
        self, models: Mapping[str, nn.Module], optimizer: torch.optim.Optimizer
    ) -> Gathered | None:
        """The whole state to save (every process must call it); None when the models are whole
        already."""
        if not self.on:
            return None
        weights = {name: self.whole_weights(model) for name, model in models.items()}
        return Gathered(weights, self.optimizer_state(optimizer))

    def whole_weights(self, model: nn.Module) -> dict[str, torch.Tensor] | None:
        """A sharded model's whole state dict on the main process (empty elsewhere; every
        process must call it); None when the model is whole already."""
        return get_model_state_dict(model, options=GATHER) if self.on else None

    def load_model_state(self, model: nn.Module, state: dict[str, torch.Tensor]) -> None:
        """Load the main process's whole `state` (ignored elsewhere) into each process's shard."""
        set_model_state_dict(model, state if self.processes.main else {}, options=SCATTER)

    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """AdamW's whole state on the main process, in `optimizer.state_dict()`'s layout (by
        parameter index), so that any run, sharded or not, resumes from it."""
        models = self._container()
        full = get_optimizer_state_dict(models, optimizer, options=GATHER)
        if not self.processes.main:
            return {}
        index = {name: i for i, name in enumerate(self._names(models))}
        return {
            "state": {index[name]: s for name, s in full["state"].items()},
            "param_groups": [
                {**g, "params": [index[name] for name in g["params"]]} for g in full["param_groups"]
            ],
        }

    def load_optimizer_state(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        """Load `optimizer.state_dict()`-layout state (the main process's) into every shard."""
        models = self._container()
        names = self._names(models)
        full = {}
        if self.processes.main:
            full = {
                "state": {names[i]: s for i, s in state["state"].items()},
                "param_groups": [
                    {**g, "params": [names[i] for i in g["params"]]} for g in state["param_groups"]
                ],
            }
        set_optimizer_state_dict(models, optimizer, full, options=SCATTER)

    def _container(self) -> nn.Module:
        """The trained models as one module, whose parameters are the optimizer's, in order."""
        return nn.ModuleList(self.models)

    @staticmethod
    def _names(models: nn.Module) -> list[str]:
        return [name for name, p in models.named_parameters() if p.requires_grad]


UNSHARDED = Sharding()
