"""A generation function killed mid-generation is replaced and its groups re-run: no sample is
lost or duplicated, and every sample equals what a fault-free run draws, also for long tails
cut at tau and resumed on another function."""

from __future__ import annotations

import pytest
from ray_workload import K, cpu_profile
from transformers import AutoModelForCausalLM

from rlguard.runtime.executors import RuntimeConfig, ServerlessExecutor
from rlguard.runtime.executors.faults import FaultPlan
from rlguard.runtime.generation.generator import GroupGenerator
from rlguard.runtime.policies.components import Components
from rlguard.runtime.policies.pricing import Prices

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


@pytest.fixture(scope="module")
def faulty_run(policy_dir, varied_groups):
    executor = ServerlessExecutor(
        RuntimeConfig(str(policy_dir), max_batch=2 * K, actors=2),
        Prices(keep_alive_s=0.0),  # released functions stop at once: the pool scales to zero
        cpu_profile(),
        # equal counts mix long and short groups on each function, so each one reaches tau
        # with its long group unfinished and that tail is cut and consolidated
        Components(scaling=False, assign=False),
        tau=0.5,
        fault=FaultPlan(function=1, after_steps=2),
    )
    try:
        samples, report = executor.run_generation(varied_groups)
        return samples, report, executor.last_phase, len(executor.pool.live)
    finally:
        executor.close()


def test_a_killed_function_is_replaced_and_nothing_is_lost_or_repeated(faulty_run, varied_groups):
    samples, report, phase, _ = faulty_run
    assert phase.replaced == 1
    assert report.cold_starts == 3  # two functions, then the replacement
    keys = [(s.group_id, s.sample) for s in samples]
    assert sorted(keys) == [(g.group_id, s) for g in varied_groups for s in range(K)]
    assert all(s.finished for s in samples)


def test_the_pool_scales_to_zero_without_keep_alive(faulty_run):
    _, report, _, live = faulty_run
    assert live == 0
    assert report.gpu_s > 0


def test_rerun_and_migrated_samples_equal_a_fault_free_run(
    faulty_run, policy_dir, tokenizer, varied_groups
):
    samples, _, phase, _ = faulty_run
    assert phase.migrated_groups >= 1
    model = AutoModelForCausalLM.from_pretrained(policy_dir)
    clean = GroupGenerator(model, tokenizer, max_batch=64).generate(varied_groups)
    assert [(s.group_id, s.sample, s.tokens) for s in samples] == [
        (s.group_id, s.sample, s.tokens) for s in clean.samples
    ]
