"""The serverful baseline in verl's style: a fixed pool of colocated workers, held for the job.

Every worker holds every role (generation, scoring, judges, training), as verl's hybrid engine
colocates them. The pool starts once, with the executor, and is billed whole for every second
at the VM price. A step runs stage by stage: all workers generate an equal count of groups (each
sample's prompt prefilled, as verl repeats a prompt K times), then all score, then all judge,
then worker 0 updates the policy and every worker takes the new weights.
"""

from __future__ import annotations

import time

from rlguard.runtime.executors.base import Executor, RuntimeConfig
from rlguard.runtime.executors.faults import FaultPlan
from rlguard.runtime.executors.functions import GENERATION, TRAINING
from rlguard.runtime.executors.generation_phase import GenerationPhase, PhaseResult
from rlguard.runtime.executors.pool import Function, FunctionPool
from rlguard.runtime.generation.generator import GroupRequest
from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.report import StepReport


class ServerfulExecutor(Executor):
    def __init__(
        self, config: RuntimeConfig, prices: Prices, fault: FaultPlan | None = None
    ) -> None:
        super().__init__(config, prices, fault)
        self.workers, self.startup = self._start_pool()

    def _start_pool(self) -> tuple[list[Function], StepReport]:
        """Start every worker, once, with the job: what that took and cost."""
        meter, started = Meter(self.prices), time.perf_counter()
        self.pool.begin(meter, started)
        workers = self.pool.acquire(self.config.actors, roles=())
        self.cold_starts_s = [w.cold_start_s for w in workers]
        end = time.perf_counter()
        self.pool.end(end)
        gpu_s, usd = meter.serverful(self._gpus(), end - started)
        return workers, StepReport(end - started, gpu_s, usd, cold_starts=len(workers))

    def _make_pool(self) -> FunctionPool:
        worker = self.config.worker(self.tokenizer.eos_token_id, dedup_prefill=False)
        return FunctionPool(worker, keep_alive_s=float("inf"))

    def _gpus(self) -> int:
        return self.config.actors * self.config.gpus_per_actor

    def _generate(self, requests: list[GroupRequest]) -> PhaseResult:
        self.pool.sync(self.workers, [GENERATION])  # the policy's latest weights
        chunks = equal_count_split(len(requests), len(self.workers))
        phase = GenerationPhase(
            self.pool, self.config.max_batch, release_when_done=False, fault=self.take_fault()
        )
        work = [
            (w, [requests[i] for i in chunk]) for w, chunk in zip(self.workers, chunks, strict=True)
        ]
        result = phase.run(work, tau=None)
        self.workers = [phase.replacements.get(w, w) for w in self.workers]
        return result

    def _hold(self, role: str) -> list[Function]:
        workers = self.workers[:1] if role == TRAINING else list(self.workers)
        self.pool.sync(workers, [role])  # a replaced worker takes the training state it lacks
        return workers

    def _let_go(self, functions: list[Function]) -> None:
        """Held for the whole job."""

    def _bill(self, meter: Meter, since: float, end: float) -> tuple[float, float]:
        return meter.serverful(self._gpus(), end - since)
