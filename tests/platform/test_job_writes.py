"""What a hostile job's reports may write into the platform's own store, through the API in process
(SQLite, no Ray): a warning's `data` over 4 KiB is refused 422 and the file does not grow; a job
past its allowance (`--job-store-mb`) is answered 413 `job_store_full` on every report path, warned
once, and the store stops growing, for a fresh server too; a re-sent eval costs nothing; a job
faster than its rate is answered 429 with Retry-After, which the job's client waits out; and
another tenant's job reports on as if nothing happened."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from in_process import http_server
from reporting_app import Clock, Setup, serving
from sqlalchemy import func, select

from rlguard.platform.artifacts import StoredCheckpoint
from rlguard.platform.client import JobReporter
from rlguard.platform.db import Checkpoint, Event, json_bytes
from rlguard.platform.job_writes import ROW_BYTES, JobWrites, StoreFull, WriteLimits
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import (
    CheckpointReport,
    DeliveryReport,
    EvalReport,
    StepReport,
    WatchWarningReport,
)
from rlguard.platform.step_reports import StepReports
from rlguard.platform.watch_reports import WatchReports

MiB = 1 << 20
UNHURRIED = WriteLimits(store_mb=1, reports_per_s=1e6, burst=1_000_000)


def _db_bytes(tmp_path: Path) -> int:
    """The store's files as they are on disk: the database and its write-ahead log."""
    return sum(p.stat().st_size for p in tmp_path.glob("platform.db*"))


def _warning(i: int, data_bytes: int) -> dict:
    return {"code": "noise", "message": f"warning {i}", "data": {"x": "x" * (data_bytes - 9)}}


def _refused(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["type"]) == (code, "invalid_request_error"), error
    return error


DELIVERY = {
    "best_step": 1,
    "best_score": 0.5,
    "step": None,
    "path": None,
    "rule": "no_checkpoint_at_or_before_best_eval",
    "reason": "none saved",
}
ONE_OF_EACH = {
    "warnings": _warning(0, 10),
    "steps": {"step": 0, "step_s": 1.0},
    "evals": {"step": 0, "score": 0.5, "progress": 0.1},
    "delivery": DELIVERY,
}


def _refused_in_process(setup: Setup, tenant: str, rounds: int) -> int:
    """`rounds` reports on each path straight to the platform's report code (the API adds its
    answer's shape, and ~5 ms a request in FastAPI's test client); how many were refused."""
    job_id, token = setup.jobs[tenant]
    watch = WatchReports(setup.platform, setup.writes)
    steps = StepReports(setup.platform, setup.writes)
    evals = [
        (job_id, token, EvalReport(step=i, score=0.5, progress=0.1), None) for i in range(rounds)
    ]
    answers = Reports(setup.platform, setup.writes).evals(evals)
    refused = sum(isinstance(a, StoreFull) for a in answers)
    for i in range(rounds):
        for report, body in (
            (watch.warning, WatchWarningReport(**_warning(i, 10))),
            (steps.step, StepReport(step=i, step_s=1.0)),
            (watch.delivery, DeliveryReport(**DELIVERY)),
        ):
            try:
                report(job_id, token, body)
            except StoreFull:
                refused += 1
    return refused


def _spend_the_rest(setup: Setup, tenant: str) -> None:
    """Ever smaller reports until not even a bare step fits: the job's allowance spent to its
    last few bytes."""
    for size in (1000, 250, 60, 10):
        while setup.post(tenant, "warnings", _warning(0, size)).status_code == 201:
            pass
    step = 10_000
    while setup.post(tenant, "steps", {"step": step}).status_code == 201:
        step += 1


def test_warnings_of_a_mebibyte_are_refused_and_the_store_does_not_grow(tmp_path):
    """The attack that grew the store by 134 MiB: 101 warnings whose `data` is ~1 MiB each, each
    body just under the API's 1 MiB limit."""
    with serving(tmp_path, UNHURRIED) as setup:
        before, events = _db_bytes(tmp_path), setup.stored("acme")
        for i in range(101):
            body = _warning(i, MiB - 100)
            error = _refused(setup.post("acme", "warnings", body), 422, "invalid_value")
            assert error["param"] == "data"
            assert f"data: {MiB - 100} bytes as JSON, over the limit of 4096" in error["message"]
        assert setup.stored("acme") == events
        assert setup.job("acme")["store_bytes"] == 0
        grown = _db_bytes(tmp_path) - before
        assert grown <= setup.writes.limits.store_bytes, grown
        ok = setup.post("acme", "warnings", _warning(0, 4096))  # the largest a record may be
        assert ok.status_code == 201, ok.text


def test_a_job_past_its_allowance_is_refused_warned_once_and_the_store_stops(tmp_path):
    with serving(tmp_path, UNHURRIED) as setup:
        limit = setup.writes.limits.store_bytes
        for i in range(1000):  # 4 KiB warnings until the allowance is spent
            answer = setup.post("acme", "warnings", _warning(i, 4000))
            if answer.status_code != 201:
                break
        error = _refused(answer, 413, "job_store_full")
        job = setup.job("acme")
        assert (job["store_limit_bytes"], limit, i > 200) == (MiB, MiB, True)
        assert limit - (4100 + ROW_BYTES) < job["store_bytes"] <= limit
        message = error["message"]
        assert f"hold {job['store_bytes']} bytes" in message and f"limit of {limit}" in message
        assert "--job-store-mb 1" in message and error["param"] is None
        _spend_the_rest(setup, "acme")
        own = setup.events("acme", "log") + setup.events("acme", "metrics")
        own = [e for e in own if e["data"].get("source") != "platform"]
        job = setup.job("acme")
        assert job["store_bytes"] == sum(json_bytes(e["data"]) + ROW_BYTES for e in own)
        [warned] = setup.warnings("acme", "job_store_full")
        assert (warned["level"], warned["data"]["source"]) == ("warning", "platform")
        assert warned["data"]["data"]["allowed"] == limit

        events, files = setup.stored("acme"), _db_bytes(tmp_path)
        for what, body in ONE_OF_EACH.items():  # each report path through the API, then 996
            _refused(setup.post("acme", what, body), 413, "job_store_full")
        assert _refused_in_process(setup, "acme", 249) == 4 * 249
        assert setup.stored("acme") == events
        assert _db_bytes(tmp_path) == files
        assert setup.job("acme")["store_bytes"] == job["store_bytes"]
        assert len(setup.warnings("acme", "job_store_full")) == 1

        # The count is the job's row: a fresh server's reports hold the job to it too.
        fresh = Reports(setup.platform, JobWrites(UNHURRIED))
        eval_ = EvalReport(step=999, score=0.5, progress=0.1)
        [answer] = fresh.evals([(*setup.jobs["acme"], eval_, None)])
        assert isinstance(answer, StoreFull)
        assert setup.stored("acme") == events


def test_a_resent_eval_or_step_costs_nothing_more(tmp_path):
    with serving(tmp_path, UNHURRIED) as setup:
        eval_ = {"step": 1, "score": 0.5, "progress": 0.1}
        first = setup.post("acme", "evals", eval_).json()
        assert setup.post("acme", "steps", {"step": 1, "step_s": 1.0}).status_code == 201
        spent = setup.job("acme")["store_bytes"]
        assert spent >= 2 * ROW_BYTES
        again = setup.post("acme", "evals", eval_).json()
        assert again["duplicate"] and again["event_seq"] == first["event_seq"]
        assert setup.post("acme", "steps", {"step": 1, "step_s": 1.0}).json()["duplicate"]
        assert setup.job("acme")["store_bytes"] == spent
        setup.fill("acme")  # even with nothing left, a re-sent report is answered as before
        assert setup.post("acme", "evals", eval_).json()["duplicate"]
        assert setup.post("acme", "steps", {"step": 1, "step_s": 1.0}).status_code == 201
        _refused(setup.post("acme", "evals", {**eval_, "step": 2}), 413, "job_store_full")


def test_a_checkpoint_costs_its_row_and_event_once(tmp_path):
    with serving(tmp_path, UNHURRIED) as setup:
        job_id, token = setup.jobs["acme"]
        reports = Reports(setup.platform, setup.writes)
        report = CheckpointReport(step=3, path="out/c", metrics={"eval": 0.5})
        stored = StoredCheckpoint("output/c", "t/j/checkpoints/step-3-x")
        reports.checkpoint(job_id, token, report, stored)
        with setup.platform.store.transaction() as s:
            row = s.scalar(select(Checkpoint))
            data = s.scalar(select(Event.data).where(Event.type == "checkpoint"))
        kept = {"path": row.path, "store_key": row.store_key, "metrics": row.metrics}
        cost = json_bytes(kept) + json_bytes(data) + 2 * ROW_BYTES
        assert setup.job("acme")["store_bytes"] == cost
        reports.checkpoint(job_id, token, report, stored)  # re-sent: recorded once, free
        assert setup.job("acme")["store_bytes"] == cost
        setup.fill("acme")
        with pytest.raises(StoreFull):
            reports.checkpoint(job_id, token, report.model_copy(update={"step": 4}), stored)
        with setup.platform.store.transaction() as s:
            assert s.scalar(select(func.count()).select_from(Checkpoint)) == 1


def test_another_tenants_job_reports_on_while_one_is_refused(tmp_path):
    clock = Clock()
    limits = WriteLimits(store_mb=1, reports_per_s=10, burst=20)
    with serving(tmp_path, limits, clock) as setup:
        # A caller without acme's token spends nothing of acme's rate (answered 401 anyway).
        for _ in range(2 * limits.burst):
            forged = setup.post("acme", "warnings", _warning(0, 10), token="rlj_forged")
            assert forged.status_code in (401, 429)
        assert setup.post("acme", "warnings", _warning(0, 10)).status_code == 201

        setup.fill("acme")
        _refused(setup.post("acme", "warnings", _warning(1, 10)), 413, "job_store_full")
        eval_ = {"step": 1, "score": 0.5, "progress": 0.1}
        _refused(setup.post("acme", "evals", eval_), 413, "job_store_full")
        for answer in (
            setup.post("beta", "warnings", _warning(1, 10)),
            setup.post("beta", "steps", {"step": 1, "step_s": 1.0}),
            setup.post("beta", "evals", eval_),
        ):
            assert answer.status_code in (200, 201), answer.text
        assert setup.warnings("beta", "job_store_full") == []

        while setup.post("acme", "warnings", _warning(2, 10)).status_code != 429:
            pass
        assert setup.post("beta", "evals", {**eval_, "step": 2}).status_code == 200
        assert setup.job("beta")["store_bytes"] > 0


def test_a_flood_is_answered_429_and_the_jobs_client_waits_it_out(tmp_path):
    limits = WriteLimits(store_mb=32, reports_per_s=10, burst=10)
    with serving(tmp_path, limits) as setup, http_server(setup.api.app) as url:
        job_id, token = setup.jobs["acme"]
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=auth) as job:
            statuses = [
                job.post(f"/v1/jobs/{job_id}/steps", json={"step": i})
                for i in range(2 * limits.burst)
            ]
        limited = [r for r in statuses if r.status_code == 429]
        assert limited and all(r.status_code == 201 for r in statuses[: limits.burst])
        error = _refused(limited[0], 429, "rate_limited")
        assert limited[0].headers["retry-after"] == "1"
        assert "faster than 10 per second" in error["message"]
        taken = len(statuses) - len(limited)
        assert len(setup.events("acme", "metrics")) == taken  # nothing of a refused one stored

        reporter = JobReporter(url, job_id, token, retry_s=30)
        seen: list[int] = []
        post = reporter.http.post

        def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
            response = post(*args, **kwargs)
            seen.append(response.status_code)
            return response

        reporter.http.post = counted  # type: ignore[method-assign]
        for step in range(100, 100 + 2 * limits.burst):  # faster than the rate: it must wait
            assert not reporter.step(step, step_s=1.0)["duplicate"]
        assert 429 in seen and seen.count(201) == 2 * limits.burst
        assert len(setup.events("acme", "metrics")) == taken + 2 * limits.burst
