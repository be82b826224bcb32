"""The serverful baseline in verl's style: one fixed pool, colocated, stage by stage.

Every GPU generates (one actor per `gpus_per_actor` GPUs, an equal count of prompt groups each),
then all GPUs score, then all train; the whole pool is billed for the whole step at the VM price
whether it works or waits. Prefill is shared as verl's vLLM rollout shares it: the K samples of a
prompt are one request with `n = K` and prefix caching is on (`enable_prefix_caching=True` in
verl's vllm_rollout_spmd.py), so a group's prompt and the system prefix are prefilled once.
Generation starts with the phase switch (weights synced to the engine, its wake and sleep).
"""

from __future__ import annotations

from rlguard.runtime.policies.assignment import equal_count_split
from rlguard.runtime.policies.cost import Meter
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.policies.report import StepReport
from rlguard.runtime.sim.decode import simulate_generation
from rlguard.runtime.sim.phases import scoring_s, training_s
from rlguard.runtime.sim.setups import Setup
from rlguard.runtime.sim.workload import TokenBatch


def serverful_step(
    batch: TokenBatch, setup: Setup, profile: TimeProfile, prices: Prices
) -> StepReport:
    n_actors = setup.n_gpus // profile.gpus_per_actor
    assignment = equal_count_split(len(batch.keys), n_actors)
    gen = simulate_generation(assignment, batch, profile, dedup=True, tau=None)
    score, train = scoring_s(batch, profile, setup), training_s(batch, profile, setup)
    generation = profile.phase_switch_s + gen.end_s
    step_s = generation + score + train
    gpu_s, usd = Meter(prices).serverful(setup.n_gpus, step_s)
    return StepReport(
        step_s=step_s,
        gpu_s=gpu_s,
        cost_usd=usd,
        phases={"generation": generation, "scoring": score, "training": train},
        actor_busy_s=list(gen.actor_end_s),
        actor_idle_s=[gen.end_s - end for end in gen.actor_end_s],
        prefill_tokens=gen.prefill_tokens,
        decode_tokens=gen.decode_tokens,
    )
