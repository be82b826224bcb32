"""Wait for remote calls one at a time, as they finish, so each gets its own end time.

A call whose actor died comes back as `ActorDied` (the executor replaces the function and re-runs
the work); any other remote error is re-raised as the exception the function itself raised.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import ray
from ray.exceptions import RayActorError, RayTaskError

K = TypeVar("K")


@dataclass(frozen=True)
class ActorDied:
    error: RayActorError


@dataclass(frozen=True)
class Done(Generic[K]):
    key: K
    value: object  # the call's return value, or ActorDied
    at: float  # perf_counter when the driver saw it finish


def as_completed(pending: MutableMapping[ray.ObjectRef, K]) -> Iterator[Done[K]]:
    """Yield each pending call as it finishes; the caller may add calls to `pending` meanwhile."""
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        key = pending.pop(ready[0])
        try:
            value: object = ray.get(ready[0])
        except RayActorError as e:
            value = ActorDied(e)
        except RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, Exception):
                raise cause from None
            raise
        yield Done(key, value, time.perf_counter())
