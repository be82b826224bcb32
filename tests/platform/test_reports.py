"""The eval report path in process (a store on SQLite, no Ray: a recording executor): what a
report is answered, re-sent reports, a batch that fails to commit, and a decision's evidence."""

from __future__ import annotations

import pytest
from in_process import in_process_platform
from sqlalchemy import func, select

from rlguard.platform import reports as reports_module
from rlguard.platform.db import DecisionRecord, Event, Tenant
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import EvalReport, JobCreate
from rlguard.platform.service import Platform
from rlguard.platform.tenants import create_tenant


@pytest.fixture
def platform(tmp_path) -> Platform:
    with in_process_platform(tmp_path) as platform:
        yield platform


def _running_job(platform: Platform, **stop_policy) -> tuple[str, str]:
    tenant_id, _ = create_tenant(platform.store, "acme", 2)
    with platform.store.transaction() as s:
        tenant = s.get(Tenant, tenant_id)
    body = {"command": "true", "stop_policy": stop_policy}
    job_id = platform.submit(tenant, JobCreate.model_validate(body))
    platform.launch(job_id)
    platform.run_started(job_id, pid=1, node_id="node")
    return job_id, platform.executor.env[job_id]["RLGUARD_JOB_TOKEN"]


def _report(reports: Reports, job_id: str, token: str, *scores_at: tuple[int, float]) -> list:
    batch = [(job_id, token, EvalReport(step=s, score=x, progress=0.1), None) for s, x in scores_at]
    return reports.evals(batch)


def test_only_a_job_stopping_for_good_is_told_to_stop(platform):
    reports = Reports(platform)
    job_id, token = _running_job(platform)
    assert _report(reports, job_id, token, (1, 0.5))[0]["action"] == "continue"
    platform.preempt(job_id)  # its SIGTERM preempts it; an answer to stop would end it for good
    assert platform.executor.stopped
    assert _report(reports, job_id, token, (2, 0.6))[0]["action"] == "continue"
    platform.cancel(job_id)
    answer = _report(reports, job_id, token, (3, 0.7))[0]
    assert answer["action"] == "stop"


def test_a_resent_eval_is_stored_once_and_answered_as_before(platform):
    reports = Reports(platform)
    job_id, token = _running_job(platform)
    first, again_in_batch = _report(reports, job_id, token, (1, 0.5), (1, 0.5))
    (again_later,) = _report(reports, job_id, token, (1, 0.5))
    assert not first["duplicate"] and again_in_batch["duplicate"] and again_later["duplicate"]
    for answer in (again_in_batch, again_later):
        assert answer["event_seq"] == first["event_seq"]
        assert answer["decision"] == first["decision"]
    with platform.store.transaction() as s:
        evals = s.scalar(select(func.count()).where(Event.job_id == job_id, Event.type == "eval"))
        decisions = s.scalar(select(func.count()).select_from(DecisionRecord))
    assert (evals, decisions) == (1, 1)


def test_a_batch_that_fails_to_commit_leaves_the_rule_as_it_was(platform, monkeypatch):
    reports = Reports(platform)
    job_id, token = _running_job(platform)  # EvalStop: k = 2, no warm-up
    _report(reports, job_id, token, (1, 0.5), (2, 0.4))  # one decline
    with monkeypatch.context() as m:
        m.setattr(reports_module._Batch, "write", lambda self: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            _report(reports, job_id, token, (3, 0.3))  # the second decline: would stop
    active = platform.active[job_id]
    assert (active.status, active.intent, active.kill_at) == ("running", None, None)
    # The failed eval is not a re-sent one and its decline was forgotten: a rise now continues.
    answer = _report(reports, job_id, token, (3, 0.45))[0]
    assert not answer["duplicate"] and answer["action"] == "continue"
    assert _report(reports, job_id, token, (4, 0.44), (5, 0.43))[-1]["action"] == "stop"


@pytest.mark.parametrize(("rule", "evals"), [("evalstop", 3), ("patience", 6)])
def test_evidence_is_the_range_of_evals_a_decision_rests_on(platform, rule, evals):
    reports = Reports(platform)
    job_id, token = _running_job(platform, rule=rule)
    answers = _report(reports, job_id, token, *[(s, s / 10) for s in range(1, 7)])  # no stop
    with platform.store.transaction() as s:
        last = s.scalar(
            select(DecisionRecord).where(DecisionRecord.event_seq == answers[-1]["event_seq"])
        )
        seqs = s.scalars(
            select(Event.seq)
            .where(Event.job_id == job_id, Event.type == "eval")
            .order_by(Event.seq)
        ).all()
    assert last.evidence == {"from_seq": seqs[-evals], "to_seq": seqs[-1], "evals": evals}


def test_a_job_sets_its_patience_and_a_drop_then_a_plateau_stops_it(platform):
    """EvalStop (k = 2) never stops a score that drops once and then stays flat; patience,
    which compares with the best so far, does, after the number of evals the job asked for."""
    reports = Reports(platform)
    job_id, token = _running_job(platform, rule="patience", patience=3)
    assert platform.active[job_id].rule.params.patience == 3
    scores = [(1, 0.5), (2, 0.6), (3, 0.4), (4, 0.41), (5, 0.4)]
    answers = _report(reports, job_id, token, *scores)
    assert [a["action"] for a in answers] == ["continue"] * 4 + ["stop"]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3"])
def test_a_bad_patience_is_refused_naming_the_field(platform, bad):
    with pytest.raises(ValueError, match="patience"):
        JobCreate.model_validate({"command": "true", "stop_policy": {"patience": bad}})
