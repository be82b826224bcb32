"""fp16 under FSDP with an inf in one process's shard only: under `accelerate launch`, each process
shards a small model, runs one backward, sets its first gradient shard to inf on the last process
alone, and saves whether its weights moved and its loss scale after the step, to OUT/<rank>.pt.

    python inf_shard_worker.py OUT_DIR
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from torch import nn

from rlguard.train.distributed import DataParallel
from rlguard.train.precision import LossScale
from rlguard.train.sharding import Sharding

if __name__ == "__main__":
    torch.manual_seed(0)
    processes = DataParallel(torch.device("cpu"))
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 2))
    Sharding("fsdp", processes).shard([model])
    scale = LossScale("fp16", processes.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    before = [p.full_tensor().clone() for p in model.parameters()]
    scale.backward(model(torch.randn(4, 8)).square().mean())
    if processes.rank == processes.size - 1:
        next(model.parameters()).grad.to_local().fill_(float("inf"))
    scale.unscale(optimizer)
    scale.step(optimizer)
    moved = any(
        not torch.equal(p.full_tensor(), b) for p, b in zip(model.parameters(), before, strict=True)
    )
    out = {"moved": moved, "scale": scale.scaler.get_scale()}
    torch.save(out, Path(sys.argv[1]) / f"{os.environ.get('RANK', 0)}.pt")
