"""Replaying a job's recorded evals through a fresh rule of its stop policy: decided up to its
first stop, as the platform decides (an eval sent while the job was being stopped is stored, not
decided); a shadow rule, which stops nothing, decides every eval."""

from __future__ import annotations

import pytest

from rlguard.platform.replay import replay_decisions

SCORES = [0.5, 0.4, 0.3, 0.2, 0.1]  # EvalStop, k = 2: stops at the third eval


def _evals() -> list[dict]:
    data = [
        {"step": i, "progress": i / 10, "score": s, "loss": None, "proxy": None}
        for i, s in enumerate(SCORES, start=1)
    ]
    return [{"type": "eval", "seq": 10 + i, "data": d} for i, d in enumerate(data)]


@pytest.mark.parametrize("shadow", [False, True])
def test_evals_after_a_stop_are_not_decided_unless_the_rule_is_a_shadow(shadow):
    policy = {"rule": "evalstop", "k": 2, "min_delta": 0.0, "warmup": 0, "shadow": shadow}
    job = {"id": "job-1", "job_kind": "rlhf", "stop_policy": policy}
    decided = replay_decisions(job, _evals())
    assert [stop for stop, _ in decided.values()][:3] == [False, False, True]
    assert sorted(decided) == ([10, 11, 12, 13, 14] if shadow else [10, 11, 12])
