"""Billing: GPU-seconds and USD for one step under serverless or serverful pricing.

Serverless: a function is billed from the start of its cold start (or from when it is ready, if
the platform does not bill cold starts) until it is released plus the keep-alive it is left warm
for, rounded up to the platform's billing granularity. Serverful: every GPU of the pool for the
whole wall time at the VM price, busy or not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rlguard.runtime.policies.pricing import Prices


@dataclass
class FunctionLife:
    """One function instance. A life that began before metering did (`carried_in`: a worker kept
    from the previous step) or is still running when it stops (`carried_out`) is metered exactly,
    without rounding: only whole invocations round up to the billing granularity."""

    gpus: int
    start_s: float
    ready_s: float
    carried_in: bool = False
    carried_out: bool = False
    end_s: float | None = None
    busy: list[tuple[float, float]] = field(default_factory=list)


class Meter:
    def __init__(self, prices: Prices) -> None:
        self.prices = prices
        self.lives: dict[str, FunctionLife] = {}

    def start(
        self, fid: str, t: float, gpus: int, cold_start_s: float = 0.0, carried_in: bool = False
    ) -> float:
        """Begin a function at `t` (or, `carried_in`, take over one already warm at `t`);
        returns when it is ready to work."""
        if fid in self.lives:
            raise ValueError(f"function {fid!r} already started")
        if gpus < 1 or cold_start_s < 0:
            raise ValueError(f"function {fid!r}: bad gpus={gpus} or cold_start_s={cold_start_s}")
        self.lives[fid] = FunctionLife(gpus, t, t + cold_start_s, carried_in)
        return t + cold_start_s

    def busy(self, fid: str, start: float, end: float) -> None:
        life = self.lives[fid]
        if not life.ready_s - 1e-9 <= start <= end:
            raise ValueError(f"function {fid!r}: busy [{start}, {end}] before ready or reversed")
        life.busy.append((start, end))

    def release(self, fid: str, t: float, keep_alive_s: float = 0.0) -> None:
        """Hand the function back at `t`; it stays billed for `keep_alive_s` more."""
        life = self.lives[fid]
        if life.end_s is not None:
            raise ValueError(f"function {fid!r} released twice")
        last_busy = max((b for _, b in life.busy), default=life.ready_s)
        if t < last_busy - 1e-9:
            raise ValueError(f"function {fid!r} released at {t} before its work ended")
        life.end_s = t + keep_alive_s

    def close(self, t: float) -> None:
        """Stop metering at `t`: functions still running are billed up to `t`, exactly."""
        for life in self.lives.values():
            if life.end_s is None:
                life.end_s, life.carried_out = t, True

    @property
    def cold_starts(self) -> int:
        return sum(1 for life in self.lives.values() if life.ready_s > life.start_s)

    def billed_s(self, life: FunctionLife) -> float:
        if life.end_s is None:
            raise ValueError("a function still running cannot be billed")
        begin = life.start_s if self.prices.bill_cold_start else life.ready_s
        seconds = max(0.0, life.end_s - begin)
        grain = self.prices.billing_granularity_s
        if grain > 0 and not (life.carried_in or life.carried_out):
            seconds = math.ceil(seconds / grain - 1e-9) * grain
        return seconds

    def serverless(self) -> tuple[float, float]:
        """(GPU-seconds, USD) of every function recorded, at the serverless price."""
        gpu_s = sum(self.billed_s(life) * life.gpus for life in self.lives.values())
        return gpu_s, gpu_s * self.prices.serverless_gpu_s

    def serverful(self, n_gpus: int, wall_s: float) -> tuple[float, float]:
        """(GPU-seconds, USD) of a pool of `n_gpus` held for `wall_s`, at the VM price."""
        gpu_s = n_gpus * wall_s
        return gpu_s, gpu_s * self.prices.vm_gpu_s
