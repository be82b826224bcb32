"""Both executors on the same workload: the same samples and the same update for the same seed;
deduplicated prefill cuts prefill tokens K-fold; length-aware assignment leaves fewer slots idle
than verl's equal-count split."""

from __future__ import annotations

import pytest
import torch
from ray_workload import PROMPTS, K, cpu_profile
from transformers import AutoModelForCausalLM

from rlguard.errors import InputError
from rlguard.runtime.executors import (
    RuntimeConfig,
    ServerfulExecutor,
    ServerlessExecutor,
    StepBatch,
    StepJob,
)
from rlguard.runtime.policies.components import Components
from rlguard.runtime.policies.pricing import Prices
from rlguard.train.config import TaskConfig

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]

TASK = TaskConfig(
    name="toy",
    prompts="unused.jsonl",
    reward={"function": "rlguard.train.toy:proxy_reward"},
    judges=["math"],
    optimizer="grpo",
    k=K,
    max_new_tokens=8,
)
BATCH = StepBatch(PROMPTS, [{"answer": "5"}] * len(PROMPTS), seed=5)


def exercise(executor, groups):
    """A generation call, then a whole step; what each produced."""
    try:
        samples, report = executor.run_generation(groups)
        phase = executor.last_phase
        step = executor.run_step(BATCH)
        return {
            "samples": samples,
            "report": report,
            "idle_slot_steps": phase.idle_slot_steps,
            "step": step,
            "weights": executor.policy_weights(),
        }
    finally:
        executor.close()


@pytest.fixture(scope="module")
def runs(policy_dir, varied_groups):
    config = RuntimeConfig(
        str(policy_dir), max_batch=2 * K, actors=2, step=StepJob(TASK, learning_rate=1e-2)
    )
    prices = Prices(keep_alive_s=600.0)  # warm across phases: one cold start per function
    serverful = exercise(ServerfulExecutor(config, prices), varied_groups)
    serverless = ServerlessExecutor(
        config,
        prices,
        cpu_profile(),
        Components(scaling=False, migrate=False),  # two actors, as the pool; no cuts
    )
    return serverful, exercise(serverless, varied_groups)


def keyed(samples):
    return {(s.group_id, s.sample): s.tokens for s in samples}


def test_both_executors_draw_the_same_samples(runs):
    serverful, serverless = runs
    expected = {(g, s) for g in range(len(PROMPTS)) for s in range(K)}
    assert set(keyed(serverful["samples"])) == expected
    assert keyed(serverless["samples"]) == keyed(serverful["samples"])
    assert serverless["step"].samples == serverful["step"].samples
    assert torch.equal(serverless["step"].scores.rewards, serverful["step"].scores.rewards)
    assert torch.equal(serverless["step"].passed, serverful["step"].passed)


def test_both_executors_make_the_same_update(runs, policy_dir):
    serverful, serverless = runs
    assert serverless["step"].train.loss == pytest.approx(serverful["step"].train.loss, abs=1e-6)
    initial = AutoModelForCausalLM.from_pretrained(policy_dir).state_dict()
    moved = 0.0
    for name, tensor in serverful["weights"].items():
        torch.testing.assert_close(serverless["weights"][name], tensor, rtol=0, atol=1e-6)
        moved = max(moved, float((tensor - initial[name]).abs().max()))
    assert moved > 1e-4  # the update changed the policy


def test_deduplicated_prefill_cuts_prefill_tokens_by_the_group_size(runs):
    serverful, serverless = runs  # verl's baseline prefills every sample's prompt
    assert serverful["report"].prefill_tokens == K * serverless["report"].prefill_tokens
    assert serverful["report"].decode_tokens == serverless["report"].decode_tokens


def test_length_aware_assignment_leaves_fewer_slots_idle(runs):
    serverful, serverless = runs
    # equal counts put a long and a short group on each actor: the short one's slots idle
    # while the long one decodes; sorted by predicted length, each actor's groups end together
    assert serverless["idle_slot_steps"] < serverful["idle_slot_steps"]
    assert len(serverless["report"].actor_idle_s) == 2


def test_warm_functions_carry_over_and_the_pool_starts_once(runs):
    serverful, serverless = runs
    assert serverful["report"].cold_starts == 0  # started with the job, before any step
    assert serverless["report"].cold_starts == 2  # the first generation starts its functions
    assert serverless["step"].report.cold_starts == 0  # kept warm: no start in the next step
    assert serverless["step"].report.gpu_s > 0


def test_more_actors_than_ray_has_cpus_is_an_input_error(policy_dir):
    with pytest.raises(InputError, match="actors=3 need 3 CPUs, Ray has 2"):
        ServerfulExecutor(RuntimeConfig(str(policy_dir), actors=3), Prices())
