"""A watched job's no-eval outcome in process (SQLite, a recording executor): a job that ends
with 0 evals says so in its final state (and in its error when it failed), one with an eval does
not, and a watch's no-eval warnings are stored once per job, whichever attempt sends them."""

from __future__ import annotations

import pytest
from in_process import in_process_platform

from rlguard.platform.db import Event, Job, Tenant
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import EvalReport, JobCreate, WatchWarningReport
from rlguard.platform.service import Platform
from rlguard.platform.tenants import create_tenant
from rlguard.platform.watch_reports import WatchReports

WATCH = {"source": "jsonl", "path": "*.jsonl", "eval_tag": "eval_acc"}


@pytest.fixture
def platform(tmp_path) -> Platform:
    with in_process_platform(tmp_path) as platform:
        yield platform


def _running(platform: Platform, watch: dict | None = WATCH) -> tuple[str, str]:
    tenant_id, _ = create_tenant(platform.store, "acme", 2)
    with platform.store.transaction() as s:
        tenant = s.get(Tenant, tenant_id)
    body = {"command": "true", "watch": watch}
    job_id = platform.submit(tenant, JobCreate.model_validate(body))
    return job_id, _attempt(platform, job_id)


def _attempt(platform: Platform, job_id: str) -> str:
    platform.launch(job_id)
    platform.run_started(job_id, pid=1, node_id="node")
    return platform.executor.env[job_id]["RLGUARD_JOB_TOKEN"]


def _final(platform: Platform, job_id: str) -> tuple[Job, dict]:
    with platform.store.transaction() as s:
        job = s.get(Job, job_id)
        states = s.query(Event).filter(Event.job_id == job_id, Event.type == "state").all()
        s.expunge(job)
        return job, max(states, key=lambda e: e.seq).data


def test_a_watched_job_ending_with_no_eval_says_so_in_its_final_state(platform):
    job_id, _ = _running(platform)
    platform.run_ended(job_id, 0)
    job, state = _final(platform, job_id)
    assert state["status"] == "succeeded"
    assert state["reason"].startswith("0 evals: its watch found no 'eval_acc' in jsonl '*.jsonl'")
    assert job.error is None


def test_a_failed_one_says_so_in_its_error_too(platform):
    job_id, _ = _running(platform)
    platform.run_ended(job_id, 3)
    job, state = _final(platform, job_id)
    assert job.error["message"].startswith("the job exited with code 3")
    assert job.error["message"].endswith("(its no_eval warnings say what it found)")
    assert state["reason"] == job.error["message"]


@pytest.mark.parametrize("watch", [WATCH, None], ids=["with an eval", "unwatched"])
def test_a_job_with_an_eval_or_no_watch_ends_as_before(platform, watch):
    job_id, token = _running(platform, watch)
    if watch is not None:
        [answer] = Reports(platform).evals(
            [(job_id, token, EvalReport(step=1, score=0.5, progress=0.1), None)]
        )
        assert answer["action"] == "continue"
    platform.run_ended(job_id, 0)
    _, state = _final(platform, job_id)
    assert state == {"status": "succeeded", "previous": "running"}


def test_no_eval_warnings_are_stored_once_per_job_across_attempts(platform):
    job_id, token = _running(platform)
    warnings = WatchReports(platform)

    def warn(code: str, token: str) -> None:
        warnings.warning(job_id, token, WatchWarningReport(code=code, message=f"{code} here"))

    warn("no_eval_yet", token)
    warn("no_eval_yet", token)
    warn("not_finite", token)
    warn("not_finite", token)
    platform.preempt(job_id)
    platform.run_ended(job_id, 143)  # preempted: queued for its next attempt
    token = _attempt(platform, job_id)
    warn("no_eval_yet", token)
    warn("no_eval", token)
    with platform.store.transaction() as s:
        logged = s.query(Event).filter(Event.job_id == job_id, Event.type == "log").all()
        codes = [e.data["code"] for e in sorted(logged, key=lambda e: e.seq)]
    assert codes == ["no_eval_yet", "not_finite", "not_finite", "no_eval"]
