"""The platform schedules with the simulator's own classes: the same `Scheduler`, policies and
stop rules, built from the same registry, and they behave identically in the engine."""

from __future__ import annotations

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.registry import BASES, RuleParams, build_policy
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.stopping.evalstop import EvalStop
from rlguard.cluster.workload import paper_workload
from rlguard.platform.fairshare import admit
from rlguard.platform.rules import StopRules, platform_rule


@pytest.mark.parametrize("policy", sorted(BASES))
def test_platform_scheduler_is_the_simulators(policy):
    rules = StopRules(build_policy(policy, {}), "evalstop", RuleParams(k=2))
    assert type(rules.scheduler) is Scheduler
    assert type(rules.scheduler.policy) is type(BASES[policy]())
    assert type(rules.scheduler.stop_rule) is EvalStop
    workload = paper_workload(ScenarioConfig(gpus=16, n_jobs=60), seed=3)
    live = Engine(workload, rules.scheduler, gpus=16).run()
    simulated = Engine(
        workload, Scheduler(BASES[policy](), platform_rule("evalstop", RuleParams(k=2))), gpus=16
    ).run()
    assert np.array_equal(live.finish_s, simulated.finish_s)
    assert live.stop_reasons == simulated.stop_reasons


def test_a_jobs_override_gets_its_own_rule_and_the_same_policy():
    rules = StopRules(BASES["srtf-est"](), "evalstop", RuleParams())
    override = rules.resolve({"rule": "gao-trend", "shadow": True})
    assert override.shadow and override.rule == "gao-trend"
    assert rules.for_rule(override).policy is rules.scheduler.policy
    assert rules.for_rule(rules.resolve({})) is rules.scheduler


@pytest.mark.parametrize("backfill", [True, False])
def test_one_tenant_admission_is_the_engines_greedy_admit(backfill):
    from rlguard.cluster.engine import greedy_admit

    rng = np.random.default_rng(0)
    for _ in range(200):
        gpus = rng.choice([1, 2, 4, 8], size=rng.integers(1, 30))
        capacity = int(rng.integers(1, 40))
        none = np.zeros(len(gpus), bool)
        mine = admit(gpus, ["t"] * len(gpus), none, {"t": 10**6}, {"t": 1.0}, capacity, backfill)
        assert np.array_equal(mine, greedy_admit(gpus, capacity, backfill))
