"""The serverless executor (RLHFless): every phase on functions started on demand.

Generation: the length predictor (per-prompt EWMA, capped by each group's token budget) predicts
each group's response length; cost-aware scaling picks how many generation functions to start
(`choose_actor_count` on the time profile); groups are split by predicted length so that
functions holding short groups finish and are released early; prefill is deduplicated (a group's
prompt once for its K samples); long tails are cut at tau and consolidated. A function is a worker
holding every role (as in the simulator); a released one stays warm for the price table's
keep-alive and is reused by the next phase that asks in time, else it is stopped: between phases
the pool scales to zero. Billing is per function, per second, cold starts included
(`Meter.serverless`).

`Components` (runtime/policies/components.py, shared with the simulator) switches each RLHFless
component off for the ablation; `plan_generation`, also shared, makes the scaling and assignment
decisions. `Components.overlap` (scoring finished groups during the generation tail) is
simulator-only: this executor scores after generation and ignores it.
"""

from __future__ import annotations

import numpy as np

from rlguard.runtime.executors.base import Executor, RuntimeConfig
from rlguard.runtime.executors.faults import FaultPlan
from rlguard.runtime.executors.functions import GENERATION, TRAINING
from rlguard.runtime.executors.generation_phase import GenerationPhase, PhaseResult
from rlguard.runtime.executors.pool import Function, FunctionPool
from rlguard.runtime.generation.generator import GroupRequest
from rlguard.runtime.policies.components import Components, plan_generation
from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.lengths import LengthPredictor
from rlguard.runtime.policies.migration import check_tau
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile


def prompt_key(request: GroupRequest) -> str:
    """The length predictor's key: the prompt's tokens."""
    return " ".join(map(str, request.prompt_ids))


class ServerlessExecutor(Executor):
    def __init__(
        self,
        config: RuntimeConfig,
        prices: Prices,
        profile: TimeProfile,
        components: Components | None = None,
        tau: float = 0.9,
        lam: float = 0.5,
        predictor: LengthPredictor | None = None,
        fault: FaultPlan | None = None,
    ) -> None:
        self.profile = profile
        self.components = components or Components()
        self.tau = check_tau(tau)
        self.lam = lam
        self.predictor = predictor or LengthPredictor()
        super().__init__(config, prices, fault)

    def _make_pool(self) -> FunctionPool:
        worker = self.config.worker(self.tokenizer.eos_token_id, self.components.dedup)
        return FunctionPool(worker, keep_alive_s=self.prices.keep_alive_s)

    def predict(self, requests: list[GroupRequest]) -> np.ndarray:
        """Predicted mean response length per group: no response outgrows its token budget."""
        predicted = self.predictor.predict([prompt_key(r) for r in requests])
        return np.minimum(predicted, [r.max_new_tokens for r in requests])

    def plan(self, requests: list[GroupRequest], predicted: np.ndarray) -> list[list[int]]:
        """Which groups each generation function gets. Unlike the simulator's colocated workers,
        a function left out of generation need not come back (scoring takes whichever functions
        are warm; the rest expire after their keep-alive and the pool scales to zero), so scaling
        does not charge for it (`idle_rejoin=False`); the meter still bills any keep-alive idle."""
        return plan_generation(
            self.components,
            predicted,
            max(r.k for r in requests),
            self.profile,
            self.prices,
            self.lam,
            most=min(self.config.actors, len(requests)),
            warm=self.pool.warm(),
            prompt_tokens=float(np.mean([len(r.prompt_ids) for r in requests])),
            idle_rejoin=False,
        )

    def _generate(self, requests: list[GroupRequest]) -> PhaseResult:
        predicted = self.predict(requests)
        chunks = self.plan(requests, predicted)
        functions = self.pool.acquire(len(chunks), [GENERATION])
        phase = GenerationPhase(
            self.pool, self.config.max_batch, release_when_done=True, fault=self.take_fault()
        )
        work = [
            (f, [requests[i] for i in chunk]) for f, chunk in zip(functions, chunks, strict=True)
        ]
        result = phase.run(work, tau=self.tau if self.components.migrate else None)
        by_group = {r.group_id: r for r in requests}
        lengths: dict[int, list[int]] = {}
        for sample in result.samples:
            lengths.setdefault(sample.group_id, []).append(len(sample.tokens))
        for group_id, observed in lengths.items():
            self.predictor.update(prompt_key(by_group[group_id]), observed)
        return result

    def _hold(self, role: str) -> list[Function]:
        """Training on one function; scoring and judging on every warm one (at least one), so
        a phase after generation starts nothing it can avoid."""
        n = 1 if role == TRAINING else max(1, self.pool.warm())
        return self.pool.acquire(n, [role])

    def _let_go(self, functions: list[Function]) -> None:
        for function in functions:
            self.pool.release(function)

    def _bill(self, meter: Meter, since: float, end: float) -> tuple[float, float]:
        return meter.serverless()
