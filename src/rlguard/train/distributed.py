"""Data parallelism: one step's prompts spread over N processes that train one policy.

`accelerate launch` (or `rlguard train --nproc N`) starts the processes; accelerate's
`PartialState` joins them in a process group (NCCL on GPUs, gloo on CPUs). Every process holds
the whole policy (or, under `sharding: fsdp`, its shard of it: sharding.py), samples, judges and
scores its share of each task's prompts (a prompt's K samples stay together, so GRPO's groups and
CGPO's per-prompt choices are whole), and sums its gradients with the others'. The batch
statistics that span processes (CRPG's mean weight, PPO's whitening moments, every denominator)
are sums over all of them, so the update is one process's on the whole batch.

Gradients are summed once per update, after every micro-batch of every task (one bucket per
parameter, all in flight at once), rather than by DDP's backward hooks: DDP needs the same number
of backward passes on every process, and CRRAFT's and CODPO's selections give processes different
numbers of micro-batches (FSDP, whose every backward is a collective, pads them instead).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import torch
from torch import Tensor

T = TypeVar("T")


class DataParallel:
    """The processes of a run: one (every collective is the identity) or N under a launcher."""

    def __init__(self, device: torch.device) -> None:
        """`device`: this process's policy device, where the collectives' tensors live."""
        self.device = device
        self.size = int(os.environ.get("WORLD_SIZE", 1))
        self.rank = 0
        # under a launcher (torchrun sets WORLD_SIZE), even a group of one, which FSDP can shard
        self.launched = "WORLD_SIZE" in os.environ
        if self.size > 1:
            from accelerate import PartialState

            # init_process_group: gloo on CPUs, NCCL on GPUs (LOCAL_RANK's GPU)
            state = PartialState(cpu=device.type != "cuda")
            self.rank, self.size = state.process_index, state.num_processes

    @property
    def main(self) -> bool:
        """The process that writes (checkpoints, logs, eval events) and decides (stops)."""
        return self.rank == 0

    def shard(self, rows: Sequence[T]) -> list[T]:
        """This process's share of a step's prompts: consecutive, sizes differing by at most one."""
        bounds = np.linspace(0, len(rows), self.size + 1).round().astype(int)
        return list(rows[bounds[self.rank] : bounds[self.rank + 1]])

    def allsum(self, tensor: Tensor) -> Tensor:
        """The sum of `tensor` over every process (a new tensor)."""
        if self.size == 1:
            return tensor
        total = tensor.detach().clone()
        torch.distributed.all_reduce(total)
        return total

    def sums(self, values: Sequence[float]) -> list[float]:
        """Each value summed over every process (one collective for all of them)."""
        if self.size == 1:
            return list(values)
        return self.allsum(torch.tensor(values, dtype=torch.float64, device=self.device)).tolist()

    def any(self, flag: bool) -> bool:
        """Whether any process's `flag` is set."""
        return self.sums([float(flag)])[0] > 0

    def sum_gradients(self, params: Iterable[torch.nn.Parameter]) -> None:
        if self.size == 1:
            return
        pending = [torch.distributed.all_reduce(p.grad, async_op=True) for p in params]
        for work in pending:
            work.wait()

    def broadcast(self, value: Any) -> Any:
        """The main process's `value`, on every process."""
        if self.size == 1:
            return value
        box = [value]
        torch.distributed.broadcast_object_list(box, src=0)
        return box[0]

    def copy_parameters(self, modules: Iterable[torch.nn.Module]) -> None:
        """Every process starts from the main process's weights (as DDP's constructor does)."""
        if self.size == 1:
            return
        for module in modules:
            for tensor in [*module.parameters(), *module.buffers()]:
                torch.distributed.broadcast(tensor.data, src=0)

    def barrier(self) -> None:
        if self.size > 1:
            torch.distributed.barrier()
