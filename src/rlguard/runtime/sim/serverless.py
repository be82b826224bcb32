"""The serverless executor (RLHFless) on simulated time.

A function is an RLHF worker on `gpus_per_actor` GPUs (like verl's colocated worker it can
generate, score and train), billed per second from its cold start to its release. One step:

1. Generation: cost-aware scaling picks how many workers generate (a worker left out still costs
   its idle time or a cold start, since it must score and train next); the groups are sorted by
   predicted length and split into runs of equal predicted decode work; prefill is deduplicated;
   long tails are cut and migrated at tau.
2. The tail (sim/tail.py): a worker whose generation is done scores finished groups while the
   tail still decodes (`overlap`, our assumption), and is held through a short idle gap or
   released and pre-warmed from history (the last step's generation time) through a long one.
3. The rest of scoring, then training, on all workers; they stay held into the next step's
   generation (the gap is zero). Training starts when every group is scored.

`Components` (runtime/policies/components.py) turns each component off for the ablation.
"""

from __future__ import annotations

from rlguard.runtime.policies.components import Components, plan_generation
from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.lengths import LengthPredictor
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.policies.report import StepReport
from rlguard.runtime.policies.scaling import estimate_actor_times
from rlguard.runtime.sim.decode import simulate_generation
from rlguard.runtime.sim.phases import group_scoring_gpu_s, training_s
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.tail import Tail
from rlguard.runtime.sim.workload import TokenBatch


class ServerlessSim:
    """Keeps the history (last generation time) that pre-warming predicts from."""

    def __init__(
        self, setup: Setup, profile: TimeProfile, prices: Prices, components: Components
    ) -> None:
        self.setup, self.profile, self.prices, self.parts = setup, profile, prices, components
        self.workers = setup.n_gpus // profile.gpus_per_actor
        self.last_generation_s: float | None = None

    def step(self, batch: TokenBatch, predictor: LengthPredictor) -> StepReport:
        predicted = predictor.predict(batch.keys)
        assignment = plan_generation(
            self.parts,
            predicted,
            batch.k,
            self.profile,
            self.prices,
            self.setup.lam,
            most=self.workers,
            warm=self.workers,  # every worker is held from the previous step's training
            prompt_tokens=batch.mean_prompt_tokens(),
            idle_rejoin=True,  # a worker left out of generation must score and train next
        )
        n = len(assignment)
        tau = self.setup.tau if self.parts.migrate else None
        gen = simulate_generation(assignment, batch, self.profile, self.parts.dedup, tau)
        expected = self.last_generation_s
        if expected is None:  # no history yet: the scaling model's estimate
            estimate = estimate_actor_times(
                predicted, batch.k, self.profile, n, batch.mean_prompt_tokens()
            )
            expected = float(estimate.max())
        self.last_generation_s = gen.end_s

        meter = Meter(self.prices)
        group_gpu_s = group_scoring_gpu_s(batch, self.profile, self.setup)
        tail = Tail(
            meter,
            gen,
            group_gpu_s,
            self.profile,
            self.prices,
            expected=expected,
            overlap=self.parts.overlap,
            workers=self.workers,
        ).run()
        train = training_s(batch, self.profile, self.setup)
        # fixed costs both executors pay, on every held worker: the weight sync into the
        # generation engine and each scoring pass's own start (sim/phases.py)
        fixed = self.profile.phase_switch_s + self.setup.scoring_passes() * (
            self.profile.score_s_per_pass
        )
        step_s = fixed + tail.scoring_end_s + train
        meter.close(step_s)
        gpu_s, usd = meter.serverless()
        hidden = sum(float(group_gpu_s[g]) for g in tail.tail_scored)
        return StepReport(
            step_s=step_s,
            gpu_s=gpu_s,
            cost_usd=usd,
            phases={
                "generation": self.profile.phase_switch_s + gen.end_s,
                "startup_wait": tail.scoring_start_s - gen.end_s,
                "scoring": tail.scoring_end_s - tail.scoring_start_s,
                "scoring_overlapped": hidden / self.setup.n_gpus,
                "training": train,
            },
            cold_starts=meter.cold_starts,
            actor_busy_s=list(gen.actor_end_s),
            actor_idle_s=tail.idle_s[:n],
            prefill_tokens=gen.prefill_tokens,
            decode_tokens=gen.decode_tokens,
        )
