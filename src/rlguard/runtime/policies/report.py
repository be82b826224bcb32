"""What one step cost and how long it took, and the comparison every `rlguard runtime` command
prints: {"config", "baseline", "serverless", "speedup", "cost_cut", "ablation"}.

`cost_cut` is measured in GPU-seconds, as RLHFless measures cost (REFERENCE.md s5); the USD cut
(`cost_cut_usd`) is reported beside it because it also contains the price gap between a
serverless GPU-second and a VM GPU-second, which is not a property of the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

HEADLINE = ("step_s", "gpu_s", "cost_usd")
MEANS = (
    *HEADLINE,
    "cold_starts",
    "prefill_tokens",
    "decode_tokens",
    "actor_busy_s",
    "actor_idle_s",
)


@dataclass
class StepReport:
    step_s: float
    gpu_s: float
    cost_usd: float
    phases: dict[str, float] = field(default_factory=dict)
    cold_starts: int = 0
    actor_busy_s: list[float] = field(default_factory=list)
    actor_idle_s: list[float] = field(default_factory=list)
    prefill_tokens: int = 0
    decode_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summarize(reports: Sequence[StepReport]) -> dict[str, Any]:
    """Means over steps (or seeds): headline numbers, phase times, and summed actor busy/idle."""
    if not reports:
        raise ValueError("no step reports to summarize")
    out: dict[str, Any] = {}
    for key in MEANS:
        values = [getattr(r, key) for r in reports]
        if key.startswith("actor_"):
            values = [sum(v) for v in values]
        out[key] = float(np.mean(values))
    phases = sorted({p for r in reports for p in r.phases})
    out["phases"] = {p: float(np.mean([r.phases.get(p, 0.0) for r in reports])) for p in phases}
    return out


def gains(baseline: Mapping[str, float], other: Mapping[str, float]) -> dict[str, float]:
    """Speedup and cost cuts of `other` against `baseline` (both summaries)."""
    return {
        "speedup": baseline["step_s"] / other["step_s"],
        "cost_cut": 1.0 - other["gpu_s"] / baseline["gpu_s"],
        "cost_cut_usd": 1.0 - other["cost_usd"] / baseline["cost_usd"],
    }


def comparison(
    config: Mapping[str, Any],
    baseline: Mapping[str, Any],
    serverless: Mapping[str, Any],
    ablation: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """The CLI's JSON object. Each ablation entry carries its own gains against the baseline."""
    return {
        "config": dict(config),
        "baseline": dict(baseline),
        "serverless": dict(serverless),
        **gains(baseline, serverless),
        "ablation": {name: {**entry, **gains(baseline, entry)} for name, entry in ablation.items()},
    }
