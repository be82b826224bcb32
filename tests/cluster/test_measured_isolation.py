"""Measured curves keep their labels hidden: the truth-isolation walk, on a replayed curve file.

Same capturing policy and rule as test_truth_isolation.py; the forbidden set adds the measured
curve and the pool it is drawn from, whose `hacking` fields are the labels.
"""

from __future__ import annotations

import numpy as np
from curve_builders import write_mixed
from test_truth_isolation import (
    FORBIDDEN_TYPES,
    CapturingPolicy,
    CapturingRule,
    attribute_names,
    forbidden_names,
    reachable,
)

from rlguard.cluster.curves import MeasuredCurve
from rlguard.cluster.engine import Engine
from rlguard.cluster.scenario import MeasuredPool, ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.workload import paper_workload

FORBIDDEN = (*FORBIDDEN_TYPES, MeasuredCurve, MeasuredPool)


def test_no_measured_curve_or_label_is_reachable_from_views_or_events(tmp_path) -> None:
    path = write_mixed(tmp_path / "curves.json")
    workload = paper_workload(ScenarioConfig(n_jobs=80, gpus=16, curves=str(path)), 1)
    assert any(isinstance(o, MeasuredCurve) for o in reachable([workload]))  # the walk can see it
    policy, rule = CapturingPolicy(), CapturingRule()
    result = Engine(workload, Scheduler(policy, rule), gpus=16).run()
    assert result.stopped.any() and result.preemptions.any()
    assert any(e.proxy is not None for e in rule.events)  # measured proxies did flow, as values
    for view in policy.views:
        for name in dir(view):
            if not name.startswith("_"):
                getattr(view, name)

    objects = reachable([*policy.views, *rule.events, policy, rule])
    assert any(isinstance(o, np.ndarray) for o in objects)
    assert [type(o).__name__ for o in objects if isinstance(o, FORBIDDEN)] == []
    offenders = {
        f"{type(o).__name__}.{n}" for o in objects for n in forbidden_names(attribute_names(o))
    }
    assert offenders == set()
