"""A pool of function processes: started on demand, kept warm, released, metered.

`acquire` hands out warm idle functions first and starts the rest (a cold
start: process start + model load + the roles' current state, measured from the request to
ready). `release` leaves a function warm for `keep_alive_s`; a function idle longer is killed
(scale to zero), and an idle one is evicted early when a new function needs its CPUs or GPUs.
Every life (start, ready, busy intervals, end) goes to the step's `Meter`, which bills it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import ray
from ray.actor import ActorHandle

from rlguard.runtime.executors.calls import ActorDied, as_completed
from rlguard.runtime.executors.functions import FunctionHost, RoleSpec
from rlguard.runtime.policies.cost import Meter


@dataclass(frozen=True)
class FunctionKind:
    """What a function hosts, what it asks Ray for, and how many GPUs it is billed for (on a
    CPU-only machine each function stands for `billed_gpus` GPUs)."""

    name: str
    roles: Mapping[str, RoleSpec]
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    billed_gpus: int = 1


@dataclass(eq=False)
class Function:
    fid: str
    actor: ActorHandle
    requested_s: float
    ready_s: float
    idle_since: float | None = None  # None while it works (or is handed out)
    states: dict[str, ray.ObjectRef] = field(default_factory=dict)  # role -> state it holds

    @property
    def cold_start_s(self) -> float:
        return self.ready_s - self.requested_s


class FunctionPool:
    def __init__(self, kind: FunctionKind, keep_alive_s: float) -> None:
        self.kind = kind
        self.keep_alive_s = keep_alive_s
        resources = ray.cluster_resources()  # what functions may hold at once
        self.capacity = {"CPU": resources.get("CPU", 0.0), "GPU": resources.get("GPU", 0.0)}
        self.live: list[Function] = []
        self.states: dict[str, ray.ObjectRef] = {}  # role -> latest state (e.g. policy weights)
        self.meter: Meter | None = None
        self.closed_at: float | None = None  # end of the last metering window
        self.started: list[Function] = []  # cold starts since the meter was set
        self._ids = itertools.count()

    # ----- metering windows (a step, or one generation call) -----------------------------------

    def begin(self, meter: Meter, t: float) -> None:
        """Meter from `t` on. Functions kept warm since the last window are carried in from its
        end, so the keep-alive they idled through is billed (to this window)."""
        self.meter, self.started = meter, []
        since = t if self.closed_at is None else min(self.closed_at, t)
        for function in self.live:
            meter.start(function.fid, since, self.kind.billed_gpus, carried_in=True)
        self.reap(t)

    def end(self, t: float) -> None:
        """Stop metering at `t`, after releasing what expired: warm ones are billed up to `t`."""
        self.reap(t)
        self.meter.close(t)
        self.meter, self.closed_at = None, t

    def busy(self, function: Function, start: float, end: float) -> None:
        self.meter.busy(function.fid, start, end)

    # ----- state the roles need (weights) ------------------------------------------------------

    def set_state(self, role: str, state: ray.ObjectRef, holder: Function | None = None) -> None:
        """Functions hosting `role` get `state` before their next work; `holder` already has it."""
        self.states[role] = state
        if holder is not None:
            holder.states[role] = state

    def sync(self, functions: Sequence[Function], roles: Sequence[str]) -> None:
        """Push the latest state of these roles to the functions that lack it."""
        calls = []
        for function in functions:
            for role in roles:
                state = self.states.get(role)
                if state is not None and function.states.get(role) is not state:
                    calls.append(function.actor.load_state.remote(role, state))
                    function.states[role] = state
        ray.get(calls)

    # ----- lifecycle ---------------------------------------------------------------------------

    def acquire(self, n: int, roles: Sequence[str]) -> list[Function]:
        """`n` functions, warm ones first, the rest started; each with the latest state of the
        `roles` it is about to run."""
        now = time.perf_counter()
        self.reap(now)
        warm = sorted(
            (f for f in self.live if f.idle_since is not None),
            key=lambda f: -f.idle_since,  # most recently used: the longest left to live
        )[:n]
        for function in warm:
            function.idle_since = None
        self.sync(warm, roles)
        for function in warm:
            self.busy(function, now, time.perf_counter())  # the weight sync is work
        return warm + self._start(n - len(warm), roles)

    def _start(self, n: int, roles: Sequence[str]) -> list[Function]:
        if n == 0:
            return []
        kind = self.kind
        self._make_room(n)
        requested = time.perf_counter()
        remote = ray.remote(FunctionHost).options(num_cpus=kind.num_cpus, num_gpus=kind.num_gpus)
        fresh = [
            Function(f"{kind.name}-{next(self._ids)}", remote.remote(kind.roles), requested, 0.0)
            for _ in range(n)
        ]
        self.live += fresh
        pending = {f.actor.ready.remote(): f for f in fresh}
        for done in as_completed(pending):
            function = done.key
            if isinstance(done.value, ActorDied):
                raise RuntimeError(f"function {function.fid} failed to start: {done.value.error}")
            self.sync([function], roles)  # the latest weights are part of its cold start
            function.ready_s = time.perf_counter()
            cold_start_s = function.ready_s - requested
            self.meter.start(function.fid, requested, kind.billed_gpus, cold_start_s)
        self.started += fresh
        return fresh

    def _in_use(self) -> dict[str, float]:
        return {
            "CPU": len(self.live) * self.kind.num_cpus,
            "GPU": len(self.live) * self.kind.num_gpus,
        }

    def _make_room(self, n: int) -> None:
        """Evict idle functions (longest idle first) until `n` more fit."""
        need = {"CPU": n * self.kind.num_cpus, "GPU": n * self.kind.num_gpus}
        idle = sorted(
            (f for f in self.live if f.idle_since is not None), key=lambda f: f.idle_since
        )
        while any(self._in_use()[r] + need[r] > self.capacity[r] + 1e-9 for r in need):
            if not idle:
                raise RuntimeError(
                    f"no room for {n} more function(s): capacity {self.capacity}, "
                    f"in use {self._in_use()}"
                )
            victim = idle.pop(0)
            self._terminate(victim, bill_until=time.perf_counter())

    def release(self, function: Function) -> None:
        """Its work is done: keep it warm for keep-alive (or stop it now if that is zero)."""
        now = time.perf_counter()
        function.idle_since = now
        if self.keep_alive_s <= 0:
            self._terminate(function, bill_until=now)

    def reap(self, now: float) -> None:
        """Kill the functions whose keep-alive ran out; they are billed to its end."""
        for function in [f for f in self.live if f.idle_since is not None]:
            expiry = function.idle_since + self.keep_alive_s
            if expiry <= now:
                self._terminate(function, bill_until=expiry)

    def replace(self, dead: Function, died_at: float, roles: Sequence[str]) -> Function:
        """A new function for one that died (billed until its death)."""
        self._terminate(dead, bill_until=died_at)
        return self._start(1, roles)[0]

    def _terminate(self, function: Function, bill_until: float) -> None:
        ray.kill(function.actor)
        self.live.remove(function)
        if self.meter is not None:
            life = self.meter.lives[function.fid]
            last = max([life.ready_s, *(b for _, b in life.busy)])
            self.meter.release(function.fid, max(bill_until, last))

    def close(self) -> None:
        for function in list(self.live):
            ray.kill(function.actor)
        self.live.clear()

    def warm(self) -> int:
        """Idle functions still within their keep-alive."""
        self.reap(time.perf_counter())
        return sum(1 for f in self.live if f.idle_since is not None)
