"""The platform's tables (SQLAlchemy 2 declarative): the resource model of docs/platform.md.

Times are Unix seconds as floats (the scheduler needs sub-second precision; the API rounds them
to integers as OpenAI does). JSON columns hold what the API returns verbatim. The schema itself is
created and upgraded by alembic (migrations/), never by `create_all`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    type_annotation_map: ClassVar = {dict[str, Any]: JSON, list[Any]: JSON}


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    quota_gpus: Mapped[int] = mapped_column(Integer)
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    created_at: Mapped[float] = mapped_column(Float)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"), index=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(20))
    scopes: Mapped[list[Any]] = mapped_column()
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_tenant_created", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"))
    kind: Mapped[str] = mapped_column(String(20))  # train | command
    job_kind: Mapped[str] = mapped_column(String(20))  # what stop rules watch: rlhf, sft, ...
    spec: Mapped[dict[str, Any]] = mapped_column()  # the submitted body, validated
    gpus: Mapped[int] = mapped_column(Integer)
    cpus: Mapped[float] = mapped_column(Float)
    estimate_s: Mapped[float] = mapped_column(Float)
    stop_policy: Mapped[dict[str, Any]] = mapped_column()
    status: Mapped[str] = mapped_column(String(20), index=True)
    token_digest: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    stop_reason: Mapped[str | None] = mapped_column(String(200), nullable=True)
    error: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    intent: Mapped[str | None] = mapped_column(String(20), nullable=True)  # why it is stopping
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    gpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)  # of its ended runs
    gpu_hours_freed: Mapped[float] = mapped_column(Float, default=0.0)  # by its early stop
    created_at: Mapped[float] = mapped_column(Float)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    uid: Mapped[int | None] = mapped_column(Integer, index=True, unique=True, nullable=True)
    sandbox: Mapped[str | None] = mapped_column(String(40), nullable=True)  # what its runs got
    quote: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)  # at submission
    measured: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)  # when it finished
    # every checkpoint uploaded for it, across its attempts (the per-job upload limits)
    uploaded_files: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    uploaded_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # what its reports' rows hold in this store (job_writes.py: the per-job allowance)
    store_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    disk: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)  # its last run's limit


class Run(Base):
    """One attempt of a job on Ray: a preempted or lost job gets a new run when it restarts."""

    __tablename__ = "runs"
    __table_args__ = (UniqueConstraint("job_id", "attempt"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))  # running | ended
    started_at: Mapped[float] = mapped_column(Float)  # launched: committed, Ray asked
    running_at: Mapped[float | None] = mapped_column(Float, nullable=True)  # its process spawned
    node_id: Mapped[str | None] = mapped_column(String(64), nullable=True)  # the Ray node
    ended_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_reason: Mapped[str | None] = mapped_column(String(40), nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)  # the job's process group
    epoch: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")  # its leader's


class ControlLease(Base):
    """The one row saying which server leads a store shared by several (lease.py); its epoch is
    the key, so taking the lease conflicts with every transaction the leader has in flight."""

    __tablename__ = "control_lease"

    epoch: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    url: Mapped[str] = mapped_column(String(300))  # where the others forward requests
    expires_at: Mapped[float] = mapped_column(Float)  # by the database's clock
    acquired_at: Mapped[float] = mapped_column(Float)


class Event(Base):
    """A job's history, in order: `seq` counts from 1 per job; `dedup` makes reports idempotent
    (a re-sent eval of the same step is stored once)."""

    __tablename__ = "events"
    __table_args__ = (
        UniqueConstraint("job_id", "seq"),
        UniqueConstraint("job_id", "dedup"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    seq: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[float] = mapped_column(Float)
    level: Mapped[str] = mapped_column(String(10))
    type: Mapped[str] = mapped_column(String(20))
    data: Mapped[dict[str, Any]] = mapped_column()
    dedup: Mapped[str | None] = mapped_column(String(80), nullable=True)


class Checkpoint(Base):
    """One reported checkpoint: unique by (job, step, path), so a step may hold a trainer's best
    weights and its resumable state side by side (migration 0007)."""

    __tablename__ = "checkpoints"
    __table_args__ = (
        UniqueConstraint("job_id", "step", "path", name="uq_checkpoints_job_id_step_path"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    run_id: Mapped[str] = mapped_column(String(40))
    step: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(String(1000))  # relative to the job's directory
    store_key: Mapped[str | None] = mapped_column(String(400), nullable=True)  # None: not held
    metrics: Mapped[dict[str, Any]] = mapped_column()
    is_best: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[float] = mapped_column(Float)


class DecisionRecord(Base):
    """A stop rule's `Decision` (rlguard.cluster.events) on one eval event, as stored, with the
    eval events it rested on (`evidence`: the range of the job's eval seqs, see
    `rules.evidence`)."""

    __tablename__ = "decisions"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    event_seq: Mapped[int] = mapped_column(Integer)
    rule: Mapped[str] = mapped_column(String(40))
    params: Mapped[dict[str, Any]] = mapped_column()
    stop: Mapped[bool] = mapped_column(Boolean)
    shadow: Mapped[bool] = mapped_column(Boolean)
    reason: Mapped[str] = mapped_column(String(200))
    evidence: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[float] = mapped_column(Float)


class File(Base):
    """A tenant's fine-tuning file (OpenAI's `/v1/files`): its bytes are in the artifact store
    at `store_key`; `shapes` counts its examples of each kind (finetune/examples.py)."""

    __tablename__ = "files"
    __table_args__ = (Index("ix_files_tenant_created", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"))
    filename: Mapped[str] = mapped_column(String(255))
    purpose: Mapped[str] = mapped_column(String(40))
    bytes: Mapped[int] = mapped_column(BigInteger)
    shapes: Mapped[dict[str, Any]] = mapped_column()
    store_key: Mapped[str] = mapped_column(String(400))
    created_at: Mapped[float] = mapped_column(Float)


class FineTuningJob(Base):
    """OpenAI's fine-tuning job over the rlguard job that runs it (`job_id`): what OpenAI's
    object reports that the job row does not hold; its status is the job's (finetune/views.py).
    `model_deleted`: its fine-tuned model was deleted (`DELETE /v1/models/{id}`)."""

    __tablename__ = "fine_tuning_jobs"
    __table_args__ = (Index("ix_fine_tuning_jobs_tenant_created", "tenant_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id"))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), unique=True)
    model: Mapped[str] = mapped_column(String(200))
    method: Mapped[dict[str, Any]] = mapped_column()  # type, resolved hyperparameters, grader
    training_file: Mapped[str] = mapped_column(String(40))
    validation_file: Mapped[str | None] = mapped_column(String(40), nullable=True)
    suffix: Mapped[str | None] = mapped_column(String(64), nullable=True)
    seed: Mapped[int] = mapped_column(Integer)
    meta: Mapped[dict[str, Any] | None] = mapped_column("metadata", nullable=True)
    model_deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[float] = mapped_column(Float)


def json_bytes(value: Any) -> int:
    """The bytes of `value` as a JSON column holds it (SQLAlchemy's `json.dumps` defaults)."""
    return len(json.dumps(value))


def same_checkpoint(job_id: str, step: int, path: str) -> tuple[Any, ...]:
    """The conditions that find a recorded checkpoint: a re-sent report is stored once."""
    return (Checkpoint.job_id == job_id, Checkpoint.step == step, Checkpoint.path == path)
