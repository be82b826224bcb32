"""Time profiles: how long one generation actor takes to prefill and decode, and how many
GPU-seconds scoring and training cost per token, on one model and one kind of GPU.

Profiles are data: the shipped ones (runtime/data/profiles/*.yaml) are derived from datasheet
bandwidth and FLOPs with every step written beside the number;
`rlguard.runtime.generation.profiling` measures one on your own hardware, and those measured on
real GPUs ship too (runtime/data/profiles/measured/). The same rules validate all, so a bad file
fails in one line.
"""

from __future__ import annotations

import math
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass

from rlguard.errors import InputError
from rlguard.io import write_text
from rlguard.runtime.policies.datafile import build, read_mapping

PROFILE_DIR = files("rlguard.runtime") / "data" / "profiles"  # derived (sim/roofline.py)
MEASURED_DIR = PROFILE_DIR / "measured"  # measured on a real GPU (generation/profiling.py)
DESCRIPTIVE_KEYS = ("model", "hardware", "derivation")  # documentation, not timing fields


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class TimeProfile:
    """Per-token and per-step times. Generation times are wall seconds of one actor (which holds
    `gpus_per_actor` GPUs, tensor parallel); scoring and training times are GPU-seconds per token
    (data parallel: divide by the GPUs used to get wall time).

    A decode step is memory-bound until the batch is large: it reads the weights once
    (`decode_s_per_step`), something per sequence (`decode_s_per_seq`) and every running
    sequence's KV cache (`decode_s_per_context_token` per token of context), but it never takes
    less than its matmuls need (`decode_compute_s_per_seq` per sequence). The last three default to
    0 and None so that a profile measured at one context length (generation/profiling.py) stays
    linear in the batch size."""

    name: str = Field(min_length=1)
    prefill_s_per_token: float = Field(ge=0)
    decode_s_per_step: float = Field(ge=0, description="fixed cost of one decode step")
    decode_s_per_seq: float = Field(ge=0, description="extra cost per sequence in the batch")
    score_s_per_token: float = Field(ge=0, description="one forward of a scoring model")
    train_s_per_token: float = Field(ge=0)
    cold_start_s: float = Field(ge=0)
    max_batch: int = Field(ge=1, description="sequences one actor decodes at once")
    gpus_per_actor: int = Field(ge=1)
    decode_s_per_context_token: float = Field(
        0.0, ge=0, description="reading one token of KV cache in a decode step"
    )
    decode_compute_s_per_seq: float = Field(
        0.0, ge=0, description="compute floor: a step with b sequences takes at least b x this"
    )
    kv_capacity_tokens: int | None = Field(
        None, ge=1, description="tokens of KV cache one actor holds (None: only max_batch binds)"
    )
    phase_switch_s: float = Field(
        0.0, ge=0, description="per step: weights to the generation engine and its wake/sleep"
    )
    score_s_per_pass: float = Field(0.0, ge=0, description="fixed wall seconds per scoring pass")
    train_s_per_update: float = Field(0.0, ge=0, description="fixed wall seconds per update")
    score_micro_s_per_token: float = Field(
        0.0,
        ge=0,
        description="micro-batch overhead of a scoring pass, per real token: unlike "
        "score_s_per_token, padding does not add to it",
    )
    train_micro_s_per_token: float = Field(
        0.0, ge=0, description="the same for an update (train_s_per_token's padding-free share)"
    )

    @model_validator(mode="after")
    def _decoding_takes_time(self) -> TimeProfile:
        """Each decode term may be 0 (a measured line can have no intercept), but not all: a
        profile whose decode step is free would make any schedule look infinitely fast."""
        if self.decode_step_s(1) <= 0:
            raise ValueError(
                "inconsistent decode times: decode_s_per_step, decode_s_per_seq and "
                "decode_compute_s_per_seq are all 0, so a decode step would take no time"
            )
        return self

    def decode_step_s(self, batch: int, context: int = 0) -> float:
        """One decode step with `batch` sequences running whose contexts add up to `context`."""
        memory = (
            self.decode_s_per_step
            + batch * self.decode_s_per_seq
            + context * self.decode_s_per_context_token
        )
        return max(memory, batch * self.decode_compute_s_per_seq)

    def decode_steps_s(self, batch: int, context: int, steps: int) -> float:
        """`steps` consecutive decode steps of the same `batch` sequences, starting at total
        context `context`, which grows by `batch` tokens per step (closed form: the memory-bound
        time is linear in the step index, the compute floor constant)."""
        if steps <= 0:
            return 0.0
        start = self.decode_s_per_step + batch * self.decode_s_per_seq
        start += context * self.decode_s_per_context_token
        slope = batch * self.decode_s_per_context_token  # memory time added per step
        floor = batch * self.decode_compute_s_per_seq
        if start >= floor:
            floored = 0
        elif floor - start >= steps * slope:  # no step reaches the floor (also: slope 0 or tiny)
            floored = steps
        else:
            floored = math.ceil((floor - start) / slope)
        rest = steps - floored  # steps j = floored .. steps-1 are memory-bound
        memory = rest * start + slope * rest * (floored + steps - 1) / 2
        return floored * floor + memory


def shipped_profile_files() -> dict[str, Traversable]:
    """Every shipped profile's file by name, the derived ones and the measured ones."""
    return {
        p.name.removesuffix(".yaml"): p
        for folder in (PROFILE_DIR, MEASURED_DIR)
        for p in folder.iterdir()
        if p.name.endswith(".yaml")
    }


def shipped_profiles() -> list[str]:
    return sorted(shipped_profile_files())


def _from_mapping(raw: dict[str, Any], where: str) -> TimeProfile:
    fields = {k: v for k, v in raw.items() if k not in DESCRIPTIVE_KEYS}
    return build(TimeProfile, fields, where)


def load_profile(name_or_path: str | Path) -> TimeProfile:
    """A profile file (YAML or JSON), or the name of a shipped profile."""
    path = Path(name_or_path)
    if path.is_file():
        return _from_mapping(read_mapping(path), str(path))
    shipped = shipped_profile_files().get(str(name_or_path))
    if shipped is not None:
        where = f"profile {name_or_path}"
        return _from_mapping(read_mapping(where, shipped.read_text(encoding="utf-8")), where)
    raise InputError(
        f"{name_or_path}: no such profile file or shipped profile "
        f"(shipped: {', '.join(shipped_profiles())})"
    )


def save_profile(
    profile: TimeProfile,
    path: Path,
    derivation: dict[str, str] | None = None,
    about: dict[str, str] | None = None,
) -> None:
    """Write a profile `load_profile` reads back; `derivation` says where each number came from,
    `about` describes the model and hardware (keys from DESCRIPTIVE_KEYS)."""
    fields: dict[str, Any] = {"name": profile.name, **(about or {})}
    fields |= {k: getattr(profile, k) for k in profile.__dataclass_fields__ if k != "name"}
    if derivation:
        fields["derivation"] = dict(derivation)
    write_text(path, yaml.safe_dump(fields, sort_keys=False, width=100))
