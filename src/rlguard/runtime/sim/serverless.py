"""The serverless executor (RLHFless) on simulated time.

A function is an RLHF worker on `gpus_per_actor` GPUs (like verl's colocated worker it can
generate, score and train), billed per second from its cold start to its release. One step:

1. Generation: cost-aware scaling picks how many workers generate (a worker left out still costs
   its idle time or a cold start, since it must score and train next); the groups are sorted by
   predicted length and split into runs of equal predicted decode work; prefill is deduplicated;
   long tails are cut and migrated at tau.
2. Every worker with no generation work left faces an idle gap until scoring. From history (the
   last step's generation time) the executor predicts that gap: a gap shorter than both the cold
   start (a released worker could not be back in time, and its cold start would cost more than
   the wait) and the keep-alive window is bridged by keeping the worker warm (held until scoring
   starts); a longer one releases the worker at once and pre-warms a new one to be ready when
   scoring is expected to start (billed from its cold start, off the critical path). A wrong
   prediction shows up as waiting or as billed idle.
3. Scoring and training on all workers, as in the baseline; they stay held into the next step's
   generation (the gap is zero).

`Components` (runtime/components.py) turns each RLHFless component off for the ablation.
"""

from __future__ import annotations

from rlguard.runtime.components import Components, plan_generation
from rlguard.runtime.cost import Meter
from rlguard.runtime.lengths import LengthPredictor
from rlguard.runtime.pricing import Prices
from rlguard.runtime.profiles import TimeProfile
from rlguard.runtime.report import StepReport
from rlguard.runtime.scaling import estimate_actor_times
from rlguard.runtime.sim.decode import simulate_generation
from rlguard.runtime.sim.phases import scoring_s, training_s
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.workload import StepBatch


class ServerlessSim:
    """Keeps the history (last generation time) that pre-warming predicts from."""

    def __init__(
        self, setup: Setup, profile: TimeProfile, prices: Prices, components: Components
    ) -> None:
        self.setup, self.profile, self.prices, self.parts = setup, profile, prices, components
        self.workers = setup.n_gpus // profile.gpus_per_actor
        self.last_generation_s: float | None = None

    def _bridge(
        self, meter: Meter, fid: str, done: float, expected: float, actual: float
    ) -> tuple[float, float]:
        """Keep or release worker `fid` (free from `done`) until scoring starts at `actual`
        (predicted: `expected`). Returns (ready time, idle time it was billed for).

        A worker the runtime decided to keep is held until scoring starts even when generation
        overruns the prediction: the runtime, not the platform, holds it (a function waiting for
        its next phase is a running invocation), and letting it go mid-gap would put a cold start
        on the critical path. The keep-alive bounds only the gaps it plans to bridge."""
        cold, keep_alive = self.profile.cold_start_s, self.prices.keep_alive_s
        gpus = self.profile.gpus_per_actor
        if expected - done <= min(cold, keep_alive):
            return actual, actual - done
        meter.release(fid, done)
        begin = max(done, expected - cold)
        return meter.start(fid + "/prewarm", begin, gpus, cold), 0.0

    def step(self, batch: StepBatch, predictor: LengthPredictor) -> StepReport:
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
        ready, idle = [], []
        for w in range(self.workers):
            fid = f"worker-{w}"
            meter.start(fid, 0.0, self.profile.gpus_per_actor, carried_in=True)
            done = gen.actor_end_s[w] if w < n else 0.0
            if w < n:
                meter.busy(fid, 0.0, done)
            at, held = self._bridge(meter, fid, done, expected, gen.end_s)
            ready.append(at)
            idle.append(held)
        score = scoring_s(batch, self.profile, self.setup)
        train = training_s(batch, self.profile, self.setup)
        score_start = max(gen.end_s, *ready)
        step_s = score_start + score + train
        meter.close(step_s)
        gpu_s, usd = meter.serverless()
        return StepReport(
            step_s=step_s,
            gpu_s=gpu_s,
            cost_usd=usd,
            phases={
                "generation": gen.end_s,
                "startup_wait": score_start - gen.end_s,
                "scoring": score,
                "training": train,
            },
            cold_starts=meter.cold_starts,
            actor_busy_s=list(gen.actor_end_s),
            actor_idle_s=idle[:n],
            prefill_tokens=gen.prefill_tokens,
            decode_tokens=gen.decode_tokens,
        )
