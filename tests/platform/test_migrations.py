"""The store's migrations on SQLite and PostgreSQL: 0002 turns a decision's listed evidence into
the range of eval seqs it spans, and back; 0006 adds a job's quote and measured record; 0007 lets
a step hold one checkpoint per name; 0008 counts what a job has had uploaded; 0009 what its
reports hold in the store; 0010 how its disk limit is held."""

from __future__ import annotations

import json
import time

import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from rlguard.platform.store import alembic_config, migrate, open_engine


def _decision_evidence(engine) -> object:
    with engine.connect() as connection:
        value = connection.execute(text("SELECT evidence FROM decisions")).scalar_one()
    return json.loads(value) if isinstance(value, str) else value  # SQLite: JSON as text


def _tenant_and_job(c, now: float, status: str, last_seq: int) -> None:  # type: ignore[no-untyped-def]
    """Tenant t-1 and its command job job-1, as the oldest revision's columns hold them."""
    c.execute(text("INSERT INTO tenants VALUES ('t-1', 'a', 1, 1.0, :now)"), {"now": now})
    c.execute(
        text(
            "INSERT INTO jobs (id, tenant_id, kind, job_kind, spec, gpus, cpus, estimate_s,"
            " stop_policy, status, last_seq, gpu_seconds, gpu_hours_freed, created_at)"
            " VALUES ('job-1', 't-1', 'command', 'rlhf', '{}', 1, 1, 1, '{}', :status,"
            " :seq, 0, 0, :now)"
        ),
        {"now": now, "status": status, "seq": last_seq},
    )


def test_evidence_list_becomes_a_range_and_back(store_url, tmp_path):
    engine = open_engine(store_url or f"sqlite:///{tmp_path / 'platform.db'}")
    migrate(engine, "0001")
    now = time.time()
    with engine.begin() as c:
        _tenant_and_job(c, now, "running", 5)
        # evals at seqs 2, 3 and 5; a checkpoint event between them
        for seq, type_ in [(1, "state"), (2, "eval"), (3, "eval"), (4, "checkpoint"), (5, "eval")]:
            c.execute(
                text(
                    "INSERT INTO events (job_id, seq, created_at, level, type, data)"
                    " VALUES ('job-1', :seq, :now, 'info', :type, '{}')"
                ),
                {"seq": seq, "type": type_, "now": now},
            )
        c.execute(
            text(
                "INSERT INTO decisions VALUES ('dec-1', 'job-1', 5, 'evalstop', '{}', true,"
                " false, '2 declines', '[2, 3, 5]', :now)"
            ),
            {"now": now},
        )
    migrate(engine)
    assert _decision_evidence(engine) == {"from_seq": 2, "to_seq": 5, "evals": 3}
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0001")
    assert _decision_evidence(engine) == [2, 3, 5]
    engine.dispose()


def test_quote_columns_come_empty_and_go(store_url, tmp_path):
    """0006 adds a job's quote and measured record: empty for jobs recorded before it."""
    engine = open_engine(store_url or f"sqlite:///{tmp_path / 'platform.db'}")
    migrate(engine, "0004")
    now = time.time()
    with engine.begin() as c:
        _tenant_and_job(c, now, "succeeded", 0)
    migrate(engine)
    with engine.connect() as c:
        assert c.execute(text("SELECT quote, measured FROM jobs")).one() == (None, None)
    columns = _jobs_columns_after_downgrade(engine, "0004")
    assert "quote" not in columns and "measured" not in columns
    engine.dispose()


def _jobs_columns_after_downgrade(engine, revision: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The jobs table's columns once the store is downgraded to `revision`."""
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), revision)
    with engine.connect() as c:
        return list(c.execute(text("SELECT * FROM jobs")).keys())


def _checkpoint(c, id_: str, step: int, path: str, at: float) -> None:  # type: ignore[no-untyped-def]
    c.execute(
        text(
            "INSERT INTO checkpoints (id, job_id, run_id, step, path, metrics, is_best,"
            " created_at) VALUES (:id, 'job-1', 'run-1', :step, :path, '{}', false, :at)"
        ),
        {"id": id_, "step": step, "path": path, "at": at},
    )


def test_a_step_holds_one_checkpoint_per_name_and_back(store_url, tmp_path):
    """0007: a trainer's best weights and its resumable state at one step, side by side; the same
    name twice is still refused; a downgrade keeps each step's first."""
    engine = open_engine(store_url or f"sqlite:///{tmp_path / 'platform.db'}")
    migrate(engine, "0006")
    now = time.time()
    with engine.begin() as c:
        _tenant_and_job(c, now, "running", 0)
        _checkpoint(c, "ckpt-a", 6, "output/best", now)
    migrate(engine)
    with engine.begin() as c:
        _checkpoint(c, "ckpt-b", 6, "output/checkpoints/step-000006", now + 1)
    with pytest.raises(IntegrityError), engine.begin() as c:
        _checkpoint(c, "ckpt-c", 6, "output/best", now + 2)
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "0006")
    with engine.connect() as c:
        assert c.execute(text("SELECT id FROM checkpoints")).scalars().all() == ["ckpt-a"]
    with pytest.raises(IntegrityError), engine.begin() as c:
        _checkpoint(c, "ckpt-d", 6, "output/other", now + 3)
    engine.dispose()


def test_a_jobs_upload_counts_start_at_zero_and_go(store_url, tmp_path):
    """0008: what a job has had uploaded (the per-job upload limits): 0 for jobs recorded
    before it, and large counts fit (a TiB of bytes); dropped on downgrade."""
    engine = open_engine(store_url or f"sqlite:///{tmp_path / 'platform.db'}")
    migrate(engine, "0007")
    with engine.begin() as c:
        _tenant_and_job(c, time.time(), "succeeded", 0)
    migrate(engine)
    with engine.begin() as c:
        assert c.execute(text("SELECT uploaded_files, uploaded_bytes FROM jobs")).one() == (0, 0)
        c.execute(text("UPDATE jobs SET uploaded_bytes = :b"), {"b": 5 << 40})
        assert c.execute(text("SELECT uploaded_bytes FROM jobs")).scalar_one() == 5 << 40
    columns = _jobs_columns_after_downgrade(engine, "0007")
    assert "uploaded_files" not in columns and "uploaded_bytes" not in columns
    engine.dispose()


def test_a_jobs_store_bytes_start_at_zero_and_go(store_url, tmp_path):
    """0009: what a job's reports hold in the store (the per-job allowance): 0 for jobs recorded
    before it, and past 32 bits fits; dropped on downgrade."""
    engine = open_engine(store_url or f"sqlite:///{tmp_path / 'platform.db'}")
    migrate(engine, "0008")
    with engine.begin() as c:
        _tenant_and_job(c, time.time(), "running", 0)
    migrate(engine)
    with engine.begin() as c:
        assert c.execute(text("SELECT store_bytes FROM jobs")).scalar_one() == 0
        c.execute(text("UPDATE jobs SET store_bytes = :b"), {"b": 5 << 32})
        assert c.execute(text("SELECT store_bytes FROM jobs")).scalar_one() == 5 << 32
    assert "store_bytes" not in _jobs_columns_after_downgrade(engine, "0008")
    engine.dispose()


def test_a_jobs_disk_is_null_until_a_run_says_and_goes_on_downgrade(store_url, tmp_path):
    """0010: how a job's disk limit is held (volume.py): NULL for jobs recorded before it."""
    engine = open_engine(store_url or f"sqlite:///{tmp_path / 'platform.db'}")
    migrate(engine, "0009")
    with engine.begin() as c:
        _tenant_and_job(c, time.time(), "running", 0)
    migrate(engine)
    disk = {"limit_bytes": 1 << 36, "enforced": "kernel"}
    with engine.begin() as c:
        assert c.execute(text("SELECT disk FROM jobs")).scalar_one() is None
        c.execute(text("UPDATE jobs SET disk = :d"), {"d": json.dumps(disk)})
        stored = c.execute(text("SELECT disk FROM jobs")).scalar_one()  # PostgreSQL: parsed
        assert (json.loads(stored) if isinstance(stored, str) else stored) == disk
    assert "disk" not in _jobs_columns_after_downgrade(engine, "0009")
    engine.dispose()
