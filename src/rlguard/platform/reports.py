"""What running jobs report: evals (stored once per step, decided by the job's stop rule, in
arrival order) and checkpoints (the best by eval score is the one delivered).

`Reports.evals` takes a whole batch (the ingest thread's group commit) in one transaction and
answers nothing before it has committed; if the batch fails, the rules are rebuilt from the store,
so they never remember an eval the store does not have.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from rlguard.cluster.events import Decision, EvalEvent
from rlguard.platform import budget, states
from rlguard.platform.artifacts import StoredCheckpoint
from rlguard.platform.db import Checkpoint, DecisionRecord, Event, Job, same_checkpoint
from rlguard.platform.job_writes import JobWrites, StoreFull
from rlguard.platform.keys import new_id, same_digest
from rlguard.platform.rules import decision_row, evidence, stop_event_data
from rlguard.platform.schemas import CheckpointReport, EvalReport
from rlguard.platform.service import Active, Conflict, Platform, Unauthorized


def eval_event(job: Job, report: EvalReport) -> EvalEvent:
    """An eval report as the cluster's stop rules see it."""
    return EvalEvent(
        job_id=job.id,
        kind=job.job_kind,
        step=report.step,
        progress=report.progress,
        score=report.score,
        loss=math.nan if report.loss is None else report.loss,
        proxy=report.proxy,
    )


def replay_reports(platform: Platform, s: Session, job: Job) -> list[Event]:
    """Rebuild what the platform holds in memory of a job's reports from the store: its state and
    intent, its stop rule's state (from the evals a rule decided on, in order), its evals' seqs
    and steps, its best checkpoint's score. The job's evals, for the caller's other bookkeeping."""
    active = platform.resync(job)  # a failed batch may have stopped it
    platform.rules.job_ended(job.id)
    decided = set(
        s.scalars(select(DecisionRecord.event_seq).where(DecisionRecord.job_id == job.id))
    )
    evals = s.scalars(
        select(Event).where(Event.job_id == job.id, Event.type == "eval").order_by(Event.seq)
    ).all()
    active.eval_seqs = [e.seq for e in evals]
    active.eval_steps = {e.data["step"] for e in evals}
    for event in evals:
        if event.seq in decided:
            report = EvalReport.model_validate(event.data)
            platform.rules.observe(active.rule, eval_event(job, report))
    checkpoints = s.scalars(select(Checkpoint).where(Checkpoint.job_id == job.id))
    scores = [c.metrics["eval"] for c in checkpoints if "eval" in c.metrics]
    active.best_eval = max(scores, default=-math.inf)
    return list(evals)


@dataclass
class _Batch:
    """One group commit's work: its jobs, loaded once, and the rows it appends, inserted in bulk
    (the ORM's unit of work costs more per row than the row's own insert)."""

    session: Session
    jobs: dict[str, Job]
    events: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    decided: dict[tuple[str, int], tuple[int, dict[str, Any] | None]] = field(
        default_factory=dict
    )  # (job, step) -> (seq, decision) of the batch's evals, for a re-sent one in the same batch

    def write(self) -> None:
        if self.events:
            self.session.execute(insert(Event), self.events)
        if self.decisions:
            self.session.execute(insert(DecisionRecord), self.decisions)


class Reports:
    def __init__(self, platform: Platform, writes: JobWrites | None = None) -> None:
        self.platform = platform
        self.writes = writes or JobWrites()  # each job's allowance in the store (job_writes.py)

    @staticmethod
    def reporting_job(job: Job | None, job_id: str, token: str) -> Job:
        if job is None or job.token_digest is None or not same_digest(token, job.token_digest):
            raise Unauthorized(job_id)
        if job.status not in states.ON_GPUS:
            raise Conflict(f"job {job_id} is {job.status}: it takes no reports")
        return job

    @contextmanager
    def reporting(self, job_id: str, token: str) -> Iterator[tuple[Session, Job]]:
        """One report of a running job, stored in one transaction under the platform's lock;
        one over the job's allowance stores nothing and is recorded as its warning instead."""
        try:
            with self.platform.lock, self.platform.store.transaction() as s:
                yield s, self.reporting_job(s.get(Job, job_id), job_id, token)
        except StoreFull as refused:
            self.writes.record_full(self.platform, refused)
            raise

    def evals(
        self, reports: list[tuple[str, str, EvalReport, StoredCheckpoint | None]]
    ) -> list[dict[str, Any] | Exception]:
        """Store a batch of evals in one transaction (group commit), each once per (job, step),
        decided by its job's stop rule in arrival order; the answers (or the refusals) in order.
        Nothing is answered before the batch is committed. An eval's checkpoint is recorded
        only as stored (deposits.py uploaded it first)."""
        answers: list[dict[str, Any] | Exception] = []
        observed: list[tuple[str, EvalReport]] = []
        with self.platform.lock:
            try:
                with self.platform.store.transaction() as s, s.no_autoflush:
                    ids = {job_id for job_id, *_ in reports}
                    batch = _Batch(
                        s, {j.id: j for j in s.scalars(select(Job).where(Job.id.in_(ids)))}
                    )
                    for job_id, token, report, stored in reports:
                        try:
                            answer = self._ingest(batch, job_id, token, report, stored, observed)
                        except (Unauthorized, Conflict, StoreFull) as refused:
                            answer = refused
                        answers.append(answer)
                    batch.write()
            except Exception:  # nothing was stored: forget what was seen of it
                with self.platform.store.transaction() as s:
                    for job_id in {job_id for job_id, _ in observed}:
                        replay_reports(self.platform, s, s.get(Job, job_id))
                raise
            now = time.time()
            for job_id, report in observed:
                self.platform.record_eval(job_id, report.progress, report.loss, now)
            full = {a.job_id: a for a in answers if isinstance(a, StoreFull)}
            for refused in full.values():
                self.writes.record_full(self.platform, refused)
        return answers

    def _ingest(
        self,
        batch: _Batch,
        job_id: str,
        token: str,
        report: EvalReport,
        stored: StoredCheckpoint | None,
        observed: list[tuple[str, EvalReport]],
    ) -> dict[str, Any]:
        job = self.reporting_job(batch.jobs.get(job_id), job_id, token)
        active = self.platform.active_job(job_id)
        if report.step in active.eval_steps:  # a re-sent report (a retry, or a resumed run)
            return self._answer(job, *self._stored(batch, job.id, report.step), duplicate=True)
        data = report.model_dump(mode="json", exclude=None if report.metrics else {"metrics"})
        checkpoint = None
        if stored is not None:
            metrics = self._eval_metrics(report)
            checkpoint = self._new_checkpoint(batch.session, job, report.step, stored, metrics)
        self.writes.charge(job, data, *self._rows(checkpoint))
        event = self.platform.next_event(job, "eval", data, dedup=f"eval:{report.step}")
        batch.events.append(event)
        if checkpoint is not None:
            self._add_checkpoint(batch.session, job, *checkpoint)
        active.eval_seqs.append(event["seq"])
        active.eval_steps.add(report.step)
        observed.append((job_id, report))
        decision = None
        if job.status != states.STOPPING:
            verdict = self.platform.rules.observe(active.rule, eval_event(job, report))
            decision = self._decide(batch, job, active, event["seq"], verdict)
        if job.status != states.STOPPING:
            decision = self._budget(batch, job, active, event["seq"], report.progress) or decision
        batch.decided[job_id, report.step] = (event["seq"], decision)
        return self._answer(job, event["seq"], decision, duplicate=False)

    @staticmethod
    def _stored(batch: _Batch, job_id: str, step: int) -> tuple[int, dict[str, Any] | None]:
        """The seq and decision of the eval of `step`, stored or earlier in this batch."""
        if (job_id, step) in batch.decided:
            return batch.decided[job_id, step]
        s = batch.session
        seq = s.scalar(
            select(Event.seq).where(Event.job_id == job_id, Event.dedup == f"eval:{step}")
        )
        decision = s.scalar(
            select(DecisionRecord).where(
                DecisionRecord.job_id == job_id, DecisionRecord.event_seq == seq
            )
        )
        return seq, None if decision is None else Reports._summary(vars(decision))

    @staticmethod
    def _eval_metrics(report: EvalReport) -> dict[str, float]:
        metrics = {"eval": report.score, "proxy": report.proxy, "loss": report.loss}
        return {k: v for k, v in metrics.items() if v is not None}

    def _decide(
        self, batch: _Batch, job: Job, active: Active, seq: int, verdict: Decision
    ) -> dict[str, Any]:
        rule = active.rule
        return self._record(
            batch,
            job,
            seq,
            {"rule": rule.rule, "params": rule.params.model_dump(), "shadow": rule.shadow},
            verdict.stop,
            verdict.reason,
            evidence(rule, active.eval_seqs),
        )

    def _budget(
        self, batch: _Batch, job: Job, active: Active, seq: int, progress: float
    ) -> dict[str, Any] | None:
        """Stop the job if its pace projects past its budget (budget.py); None otherwise."""
        gpu_hours = job.gpus * self.platform.table.executed_s(job.id, time.time()) / 3600
        now = budget.Mark(gpu_hours, progress)
        projected = budget.projection(job.spec, now, active.pace_since)
        active.pace_since = active.pace_since or now
        if projected is None or not projected.over:
            return None
        rule = budget.decision_rule(projected.budget_gpu_hours)
        seqs = {"from_seq": seq, "to_seq": seq, "evals": 1}
        evidence_ = {**seqs, **projected.evidence()}
        return self._record(batch, job, seq, rule, True, projected.reason(), evidence_)

    def _record(
        self,
        batch: _Batch,
        job: Job,
        seq: int,
        rule: dict[str, Any],
        stop: bool,
        reason: str,
        evidence_: dict[str, Any],
    ) -> dict[str, Any]:
        """Store a decision (`rule`: its rule, params and shadow); a stop is an event too, and
        one that is not a shadow's stops the job."""
        decision = decision_row(job.id, seq, rule, stop, reason, evidence_)
        batch.decisions.append(decision)
        if stop:
            data = stop_event_data(decision)
            batch.events.append(self.platform.next_event(job, "decision", data, "warning"))
        if stop and not rule["shadow"]:
            self.platform.stop_early(batch.session, job, f"{rule['rule']}: {reason}")
        return self._summary(decision)

    @staticmethod
    def _summary(decision: dict[str, Any]) -> dict[str, Any]:
        """A decision as a job's report is answered with it."""
        return {k: decision[k] for k in ("id", "rule", "stop", "shadow", "reason")}

    @staticmethod
    def _answer(
        job: Job, seq: int, decision: dict[str, Any] | None, duplicate: bool
    ) -> dict[str, Any]:
        # A job stopping for good (an early stop, a cancel) is told to stop at this eval; a job
        # being preempted or paused is not: its SIGTERM makes it checkpoint and exit as
        # preempted, and it is requeued (or paused), whereas a job that stopped on this answer
        # would exit 0 and count as done.
        stop = job.status == states.STOPPING and job.intent not in (states.PREEMPT, states.PAUSE)
        return {
            "event_seq": seq,
            "duplicate": duplicate,
            "action": "stop" if stop else "continue",
            "reason": job.stop_reason if stop else None,
            "decision": decision,
        }

    def checkpoint(
        self, job_id: str, token: str, report: CheckpointReport, stored: StoredCheckpoint
    ) -> None:
        with self.reporting(job_id, token) as (s, job):
            metrics = dict(report.metrics)
            if "eval" not in metrics:  # the eval of the same step, if the job reported one
                same_step = s.scalar(
                    select(Event).where(
                        Event.job_id == job_id, Event.dedup == f"eval:{report.step}"
                    )
                )
                if same_step is not None:
                    metrics["eval"] = same_step.data["score"]
            checkpoint = self._new_checkpoint(s, job, report.step, stored, metrics)
            self.writes.charge(job, *self._rows(checkpoint))
            if checkpoint is not None:
                self._add_checkpoint(s, job, *checkpoint)

    def _new_checkpoint(
        self, s: Session, job: Job, step: int, stored: StoredCheckpoint, metrics: dict[str, float]
    ) -> tuple[Checkpoint, dict[str, Any]] | None:
        """A checkpoint's row and its event's data, not yet added; None if it is recorded
        already (once per step and name)."""
        if s.scalar(select(Checkpoint).where(*same_checkpoint(job.id, step, stored.name))):
            return None
        checkpoint = Checkpoint(
            id=new_id("ckpt"),
            job_id=job.id,
            run_id=self.platform.active_job(job.id).run_id or "",
            step=step,
            path=stored.name,
            store_key=stored.key,
            metrics=metrics,
            is_best=False,
            created_at=time.time(),
        )
        return checkpoint, {"checkpoint": checkpoint.id, "step": step, "path": stored.name}

    @staticmethod
    def _rows(checkpoint: tuple[Checkpoint, dict[str, Any]] | None) -> list[Any]:
        """What a new checkpoint stores, as the job's allowance counts it: its row's JSON and
        its event's."""
        if checkpoint is None:
            return []
        row, data = checkpoint
        return [{"path": row.path, "store_key": row.store_key, "metrics": row.metrics}, data]

    def _add_checkpoint(
        self, s: Session, job: Job, checkpoint: Checkpoint, data: dict[str, Any]
    ) -> None:
        """Record a new checkpoint and its event; the best by eval score is the one delivered
        (of two at one step, the first recorded)."""
        active = self.platform.active_job(job.id)
        s.add(checkpoint)
        self.platform.append(s, job, "checkpoint", data)
        score = checkpoint.metrics.get("eval")
        if score is not None and score > active.best_eval:
            active.best_eval = score
            s.execute(update(Checkpoint).where(Checkpoint.job_id == job.id).values(is_best=False))
            checkpoint.is_best = True
