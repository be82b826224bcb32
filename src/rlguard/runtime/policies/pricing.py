"""Price tables: what a GPU-second costs on a serverless platform and on an on-demand VM.

Defaults are 2025-26 list prices for L40S-class GPUs (REFERENCE.md section 5): serverless GPU
per second ~$0.00053 (L40S); an on-demand 8x L40S VM (AWS g6e.48xlarge) at $30.13/h, i.e.
$0.00105 per GPU-second. A user overrides any field from a YAML or JSON file.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from rlguard.runtime.policies.datafile import build, read_mapping

DEFAULT_SOURCE = (
    "REFERENCE.md s5 list prices (2025-26): serverless L40S $0.00053/GPU-s; "
    "on-demand 8x L40S VM $30.13/h = $0.00105/GPU-s; keep-alive 60 s (assumption: about a "
    "minute, the order of common serverless idle windows)"
)


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Prices:
    """USD per GPU-second on each side, and how the serverless platform bills a function."""

    serverless_gpu_s: float = Field(0.00053, ge=0)
    vm_gpu_s: float = Field(0.00105, ge=0)
    bill_cold_start: bool = Field(True, description="a function is billed from its cold start")
    keep_alive_s: float = Field(60.0, ge=0, description="longest idle gap a function is kept warm")
    billing_granularity_s: float = Field(1.0, ge=0, description="billed time rounds up to this")
    source: str = DEFAULT_SOURCE


def load_prices(path: Path | str | None) -> Prices:
    """The defaults, with the fields a YAML/JSON file sets replaced (and validated)."""
    if path is None:
        return Prices()
    return build(Prices, read_mapping(path), str(path))
