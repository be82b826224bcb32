"""POST /v1/jobs/{id}/evals answered past FastAPI's router (eval_route.py): every answer the same
as the FastAPI route's, status, Retry-After and body, for the reports it takes and the ones it
refuses; what it does not take (a bad body, no key, an eval with a checkpoint) handed to FastAPI
with its body intact; a chunked body and one over the limit over real HTTP."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from in_process import http_server
from reporting_app import Clock, Setup, serving
from sqlalchemy import func, select

from rlguard.platform import eval_route
from rlguard.platform.db import Event
from rlguard.platform.errors import MAX_BODY_BYTES
from rlguard.platform.job_writes import WriteLimits

LIMITS = WriteLimits(store_mb=1, reports_per_s=1, burst=5)
EVAL = {"step": 1, "score": 0.5, "progress": 0.1}


def _every_answer(setup: Setup) -> list[tuple[int, str | None, str]]:
    """One of each answer an eval gets, as (status, Retry-After, body with its ids named)."""
    acme, beta = setup.jobs["acme"], setup.jobs["beta"]
    sent = [
        ("acme", EVAL, None),  # stored and decided
        ("acme", EVAL, None),  # re-sent: a duplicate
        ("acme", {**EVAL, "step": 2, "score": 0.4}, None),
        ("acme", {**EVAL, "step": 3, "score": 0.3}, None),  # EvalStop, k = 2: stop
        ("acme", {**EVAL, "step": 4}, None),  # stopping: told to stop again
        ("acme", {**EVAL, "step": 5}, None),  # over its burst of 5: 429, Retry-After
        ("beta", EVAL, beta[1] + "x"),  # a forged token: 401
        ("acme", EVAL, beta[1]),  # another job's token: 401
        ("beta", {"step": "one", "score": 0.5}, None),  # FastAPI's 422 naming the field
        ("beta", {**EVAL, "step": True}, None),  # pydantic's lax mode: step 1, in both
        ("beta", {**EVAL, "step": "7", "score": 1}, None),  # and the string and the int
        ("beta", {**EVAL, "checkpoint": "best"}, beta[1] + "y"),  # FastAPI's route: 401
    ]
    answers = [setup.post(tenant, "evals", body, token) for tenant, body, token in sent]
    path = f"/v1/jobs/{beta[0]}/evals"
    answers.append(setup.api.post(path, json=EVAL, headers={"Authorization": ""}))  # no key
    as_text = {"Authorization": f"Bearer {beta[1]}", "Content-Type": "text/plain"}
    answers.append(setup.api.post(path, content=json.dumps(EVAL), headers=as_text))
    named = []
    for r in answers:
        text = r.text.replace(acme[0], "ACME").replace(beta[0], "BETA")
        named.append((r.status_code, r.headers.get("retry-after"), re.sub(r"dec-\w+", "D", text)))
    return named


def test_the_route_answers_every_eval_as_fastapis_route_does(tmp_path, monkeypatch):
    handed_on = []
    replay = eval_route._replay
    monkeypatch.setattr(eval_route, "_replay", lambda *a: handed_on.append(1) or replay(*a))
    with serving(tmp_path / "fast", LIMITS, Clock()) as setup:
        fast = _every_answer(setup)
    assert len(handed_on) == 4  # the bad body, the checkpoint, no key, text/plain
    with serving(tmp_path / "fastapi", LIMITS, Clock(), eval_route=False) as setup:
        slow = _every_answer(setup)
    assert len(handed_on) == 4
    assert fast == slow
    statuses = [status for status, *_ in fast]
    assert statuses == [200, 200, 200, 200, 200, 429, 401, 401, 422, 200, 200, 401, 401, 422]
    assert json.loads(fast[3][2])["action"] == "stop" and fast[5][1] == "1"


@pytest.mark.parametrize("size", [64, MAX_BODY_BYTES + 1])
def test_a_chunked_eval_is_read_whole_and_bounded(tmp_path, size):
    with serving(tmp_path, LIMITS, Clock()) as setup, http_server(setup.api.app) as url:
        job_id, token = setup.jobs["acme"]
        body = json.dumps(EVAL).encode() + b" " * size  # JSON may end in any whitespace
        chunks = (body[i : i + 4096] for i in range(0, len(body), 4096))  # no Content-Length
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        url = f"{url}/v1/jobs/{job_id}/evals"
        response = httpx.post(url, content=chunks, headers=headers, timeout=30)
        with setup.platform.store.transaction() as s:
            stored = s.scalar(select(func.count()).where(Event.type == "eval"))
    if size < MAX_BODY_BYTES:
        assert (response.status_code, stored) == (200, 1), response.text
    else:
        assert response.status_code == 413 and stored == 0
        assert response.json()["error"]["code"] == "request_too_large"
