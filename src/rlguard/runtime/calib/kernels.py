"""Passes timed on a GPU's own kernels (runtime/data/kernel_passes.csv, written by
benchmarks/bench_pass_efficiency.py): a trainer's scoring pass and update of a Qwen-shaped model
on one GPU, without FSDP, verl's loop or the network.

They anchor the compute terms of scoring and training on that GPU class. The verl runs alone have
one full fine-tune without offload on H100 and one on H20 to split a pass's time between what
scales with a GPU's peak and what does not; leaving either run out moved the other's prediction
by 23-31% (docs/runtime.md). A verl pass cannot beat the kernels it runs, so the kernels' time is
a measurement of the same compute terms.

Each model is timed at two depths: time = fixed + layers x per layer (the fixed part is the
embedding, the LM head and the log-probs over the vocabulary), extrapolated to the model's depth.
Only compute-bound micro-batches enter: at least `MIN_TOKENS` tokens and a per-layer time at least
`FLOOR_MARGIN` x the slowest of the same model's and mode's micro-batches of at most `FLOOR_TOKENS`
(what the host's kernel launches take, whatever the tokens). Qwen2.5-0.5B's 15M-parameter layers
never leave that floor on an H100: its 16k-token update takes 6.0 ms a layer, its 256-token one
3.5 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rlguard.runtime.calib.coefficients import PFLOP, train_flops_per_token
from rlguard.runtime.calib.replay import COMPUTE_TERMS
from rlguard.runtime.policies.datafile import read_csv_rows
from rlguard.runtime.sim.hardware import gpu_spec, model_spec

SHIPPED = files("rlguard.runtime") / "data" / "kernel_passes.csv"
MIN_TOKENS, FLOOR_TOKENS, FLOOR_MARGIN = 8_192, 1_024, 3.0
PHASE_OF = {"score": "scoring", "train": "training", "train_gc": "training"}


class KernelCell(BaseModel):
    """One timed micro-batch: `seconds` (median) of `mode` on a `layers`-deep build of `model`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1)
    gpu: str
    model: str
    layers: int = Field(gt=0)
    mode: Literal["score", "train", "train_gc"]
    micro_batch: int = Field(gt=0)
    seq: int = Field(gt=0)
    seconds: float = Field(gt=0)

    @property
    def tokens(self) -> int:
        return self.micro_batch * self.seq


@dataclass(frozen=True)
class KernelPass:
    """A full-depth model's micro-batch on one GPU, as the fit sees it: its compute at the GPU's
    peak and in PFLOPs, and the seconds the kernels took."""

    gpu: str
    model: str
    mode: str
    tokens: int
    seconds: float
    at_peak_s: float
    pflops: float

    @property
    def phase(self) -> str:
        return PHASE_OF[self.mode]


def read_kernel_cells(path: Path | None = None) -> list[KernelCell]:
    """The shipped cells, or a CSV of the same columns; errors name the file and line."""
    return read_csv_rows(KernelCell, path, SHIPPED, "runtime/data/kernel_passes.csv")


def kernel_passes(cells: Sequence[KernelCell]) -> list[KernelPass]:
    """The compute-bound cells, each extrapolated to its model's full depth."""
    groups: dict[tuple[str, str, str], list[KernelCell]] = {}
    for cell in cells:
        groups.setdefault((cell.gpu, cell.model, cell.mode), []).append(cell)
    passes = []
    for group in groups.values():
        per_layer = _per_layer(group)
        small = [t for shallow, t in per_layer if shallow.tokens <= FLOOR_TOKENS]
        floor = max(small, default=0.0)
        for shallow, layer_s in per_layer:
            if shallow.tokens >= MIN_TOKENS and layer_s >= FLOOR_MARGIN * floor:
                passes.append(_full_depth(shallow, layer_s))
    return passes


def _per_layer(group: list[KernelCell]) -> list[tuple[KernelCell, float]]:
    """Per (micro-batch, sequence) shape timed at two depths: its shallowest cell and the
    seconds a layer adds."""
    depths: dict[tuple[int, int], list[KernelCell]] = {}
    for cell in group:
        depths.setdefault((cell.micro_batch, cell.seq), []).append(cell)
    out = []
    for timed in depths.values():
        if len(timed) >= 2:
            shallow, *_, deep = sorted(timed, key=lambda c: c.layers)
            out.append((shallow, (deep.seconds - shallow.seconds) / (deep.layers - shallow.layers)))
    return out


def _full_depth(shallow: KernelCell, layer_s: float) -> KernelPass:
    spec = model_spec(shallow.model, "kernel_passes.csv: model")
    peak = gpu_spec(shallow.gpu, "kernel_passes.csv: gpu").bf16_flops
    seconds = shallow.seconds + (spec.layers - shallow.layers) * layer_s
    tokens, mode = shallow.tokens, shallow.mode
    flops = tokens * (
        2 * spec.params
        if mode == "score"
        else train_flops_per_token(spec, lora=False, recompute=mode == "train_gc")
    )
    return KernelPass(
        shallow.gpu, shallow.model, mode, tokens, seconds, flops / peak, flops / PFLOP
    )


def fit_rows(passes: Sequence[KernelPass], phase: str, names: tuple[str, ...]) -> np.ndarray:
    """(passes, len(names)) feature rows in the fit's coefficient order: the compute at peak
    under the phase's multiplier, its PFLOPs under seconds per PFLOP, nothing else."""
    at_peak, per_pflop = COMPUTE_TERMS[phase]
    rows = np.zeros((len(passes), len(names)))
    rows[:, names.index(at_peak)] = [p.at_peak_s for p in passes]
    rows[:, names.index(per_pflop)] = [p.pflops for p in passes]
    return rows
