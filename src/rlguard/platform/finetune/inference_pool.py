"""Where a chat completion runs, so the server's event loop only awaits it.

On a server over Ray (`rlguard serve`): a Ray task with one CPU, pinned to the server's own node,
where the model directory is (a base model's path, or the fine-tuned cache of weights.py); Ray
queues it behind the jobs' CPUs like any work, and reuses its worker, which keeps the model
loaded. Without Ray (the platform in process): a worker thread, one completion at a time, behind
a limiter of its own, so waiting requests hold no thread of the API's pool. Either way at most
`MAX_IN_FLIGHT` completions are running or waiting; one more is a 429, as OpenAI's rate limit.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import anyio
from starlette.requests import Request

from rlguard.judges.llm.chat_model import Completion, Refusal, Sampling, complete
from rlguard.platform.errors import ApiError
from rlguard.platform.executor import RayExecutor

MAX_IN_FLIGHT = 16
TIMEOUT_S = 600.0
RETRY_AFTER_S = "5"


def _in_ray_worker(path: str, messages: list[dict[str, str]], sampling: Sampling) -> Any:
    import torch

    torch.set_num_threads(1)  # the task's one CPU
    return complete(path, messages, sampling)


@functools.cache
def _remote() -> Any:
    import ray

    return ray.remote(num_cpus=1, max_retries=0)(_in_ray_worker)


class InferencePool:
    def __init__(self, on_ray: bool) -> None:
        self.on_ray = on_ray
        self.in_flight = 0
        self.limiter = anyio.CapacityLimiter(1)

    async def complete(
        self, path: str, messages: list[dict[str, str]], sampling: Sampling
    ) -> Completion | Refusal:
        if self.in_flight >= MAX_IN_FLIGHT:
            message = f"{MAX_IN_FLIGHT} chat completions are already running or waiting here"
            raise ApiError(
                429, message, "rate_limit_exceeded", headers={"Retry-After": RETRY_AFTER_S}
            )
        self.in_flight += 1
        try:
            if self.on_ray:
                return await self._on_ray(path, messages, sampling)
            return await anyio.to_thread.run_sync(
                complete, path, messages, sampling, limiter=self.limiter
            )
        finally:
            self.in_flight -= 1

    async def _on_ray(
        self, path: str, messages: list[dict[str, str]], sampling: Sampling
    ) -> Completion | Refusal:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        ref = _remote().options(scheduling_strategy=here).remote(path, messages, sampling)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(ref.future()), TIMEOUT_S)
        except TimeoutError:
            ray.cancel(ref, force=True)
            raise ApiError(
                503, f"the completion did not finish in {TIMEOUT_S:.0f} s", "timeout"
            ) from None
        except asyncio.CancelledError:  # the client went away
            ray.cancel(ref, force=True)
            raise


def pool(request: Request) -> InferencePool:
    """The app's pool, made on first use (on the event loop: no race)."""
    state = request.app.state
    if getattr(state, "inference", None) is None:
        state.inference = InferencePool(isinstance(state.platform.executor, RayExecutor))
    return state.inference
