"""The job lifecycle's one state machine: every pair of statuses, legal or not, through
`Platform.transition` against the store (SQLite); and docs/platform.md's table is the code's."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from in_process import in_process_platform
from sqlalchemy import select

from rlguard.platform import states
from rlguard.platform.db import Event, Job
from rlguard.platform.keys import new_id
from rlguard.platform.service import Conflict, IllegalTransition, Platform
from rlguard.platform.tenants import create_tenant

DOCS = Path(__file__).resolve().parents[2] / "docs" / "platform.md"
SOURCES = (states.NEW, *states.ALL)
TARGETS = (*states.ALL, states.PREEMPTED)  # preempted is an event in a job's history, no status
LEGAL = {(a, b) for a, targets in states.TRANSITIONS.items() for b in targets}


@pytest.fixture(scope="module")
def platform(tmp_path_factory) -> Platform:
    with in_process_platform(tmp_path_factory.mktemp("platform")) as platform:
        yield platform


@pytest.fixture(scope="module")
def tenant_id(platform) -> str:
    return create_tenant(platform.store, "acme", 2)[0]


def _job(tenant_id: str, status: str | None) -> Job:
    return Job(
        id=new_id("job"),
        tenant_id=tenant_id,
        kind="command",
        job_kind="rlhf",
        spec={"command": "true"},
        gpus=1,
        cpus=1.0,
        estimate_s=60.0,
        stop_policy={},
        status=status,
        last_seq=0,
        created_at=time.time(),
    )


def _transition(platform: Platform, job: Job, status: str) -> None:
    """Through the method, in a transaction of its own: a new job as submit passes it, a stored
    one as loaded from the store."""
    with platform.store.transaction() as s:
        row = job if job.status is states.NEW else s.get(Job, job.id)
        platform.transition(s, row, status, "why")


def _stored(platform: Platform, job_id: str) -> tuple[str | None, list[dict]]:
    """The job's status in the store (None: no row) and its events' data, in order."""
    with platform.store.transaction() as s:
        job = s.get(Job, job_id)
        events = s.scalars(select(Event.data).where(Event.job_id == job_id).order_by(Event.seq))
        return (None if job is None else job.status), list(events)


def test_the_table_covers_every_status_and_nothing_leaves_a_terminal_one():
    assert set(states.TRANSITIONS) == set(SOURCES)
    assert all(not states.TRANSITIONS[status] for status in states.TERMINAL)
    assert {b for _, b in LEGAL} <= set(states.ALL)
    assert issubclass(IllegalTransition, Conflict)  # the API answers it with 409


@pytest.mark.parametrize(
    ("previous", "status"),
    [(a, b) for a in SOURCES for b in TARGETS],
    ids=lambda value: value or "new",
)
def test_a_status_change_is_committed_with_its_event_only_if_the_table_has_it(
    platform, tenant_id, previous, status
):
    job = _job(tenant_id, previous)
    if previous is not states.NEW:
        with platform.store.transaction() as s:
            s.add(job)
    if (previous, status) not in LEGAL:
        with pytest.raises(IllegalTransition, match=f"cannot go from {previous or 'new'} to"):
            _transition(platform, job, status)
        assert _stored(platform, job.id) == (previous, [])  # nothing written
        return
    _transition(platform, job, status)
    requeued = previous in states.ON_GPUS and status == states.QUEUED
    preempted = [{"status": states.PREEMPTED, "reason": "why"}] if requeued else []
    changed = {"status": status, "previous": previous, "reason": "why"}
    assert _stored(platform, job.id) == (status, [*preempted, changed])


def _documented() -> set[tuple[str | None, str]]:
    """The pairs of docs/platform.md's "Job states" table: `| from, ... | to | when |`."""
    section = DOCS.read_text().split("### Job states", 1)[1].split("\n## ", 1)[0]
    pairs = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not line.startswith("| ") or cells[0] == "from":
            continue
        sources = [s or states.NEW for s in re.findall(r"`(\w+)`|\(new\)", cells[0])]
        (target,) = re.findall(r"`(\w+)`", cells[1])
        pairs |= {(source, target) for source in sources}
    return pairs


def test_the_docs_table_is_the_code_table():
    assert _documented() == LEGAL
