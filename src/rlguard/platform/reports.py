"""What running jobs report: evals (stored once per step, decided by the job's stop rule, in
arrival order) and checkpoints (the best by eval score is the one delivered).

`Reports.evals` takes a whole batch (the ingest thread's group commit) in one transaction and
answers nothing before it has committed; if the batch fails, the rules are rebuilt from the store,
so they never remember an eval the store does not have.
"""

from __future__ import annotations

import math
import time
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from rlguard.cluster.events import Decision as RuleDecision
from rlguard.cluster.events import EvalEvent
from rlguard.platform import states
from rlguard.platform.db import Checkpoint, Decision, Event, Job
from rlguard.platform.keys import new_id, same_digest
from rlguard.platform.rules import evidence_window
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


def replay_rule_state(platform: Platform, s: Session, job: Job) -> list[Event]:
    """Rebuild a job's stop-rule state from its stored evals (those a rule decided on, in order);
    the job's evals, for the caller's other bookkeeping."""
    active = platform.active[job.id]
    platform.rules.job_ended(job.id)
    decided = set(s.scalars(select(Decision.event_seq).where(Decision.job_id == job.id)))
    evals = s.scalars(
        select(Event).where(Event.job_id == job.id, Event.type == "eval").order_by(Event.seq)
    ).all()
    active.eval_seqs = [e.seq for e in evals]
    for event in evals:
        if event.seq in decided:
            report = EvalReport.model_validate(event.data)
            platform.rules.observe(active.rule, eval_event(job, report))
    return list(evals)


class Reports:
    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    def _reporting_job(self, session: Session, job_id: str, token: str) -> Job:
        job = session.get(Job, job_id)
        if job is None or job.token_digest is None or not same_digest(token, job.token_digest):
            raise Unauthorized(job_id)
        if job.status not in states.ON_GPUS:
            raise Conflict(f"job {job_id} is {job.status}: it takes no reports")
        return job

    def evals(self, reports: list[tuple[str, str, EvalReport]]) -> list[dict[str, Any] | Exception]:
        """Store a batch of evals in one transaction (group commit), each once per (job, step),
        decided by its job's stop rule in arrival order; the answers (or the refusals) in order.
        Nothing is answered before the batch is committed."""
        answers: list[dict[str, Any] | Exception] = []
        observed: list[tuple[str, EvalReport]] = []
        with self.platform.lock:
            try:
                with self.platform.store.transaction() as s, s.no_autoflush:
                    stored = self._stored_evals(s, reports)
                    for job_id, token, report in reports:
                        try:
                            answer = self._ingest(s, job_id, token, report, stored, observed)
                        except (Unauthorized, Conflict) as refused:
                            answer = refused
                        answers.append(answer)
            except Exception:  # nothing was stored: the rules must forget what they saw
                with self.platform.store.transaction() as s:
                    for job_id in {job_id for job_id, _ in observed}:
                        replay_rule_state(self.platform, s, s.get(Job, job_id))
                raise
            now = time.time()
            for job_id, report in observed:
                executed = self.platform.table.executed_s(job_id, now)
                self.platform.table.observe(job_id, report.progress, report.loss, executed)
        return answers

    @staticmethod
    def _stored_evals(
        s: Session, reports: list[tuple[str, str, EvalReport]]
    ) -> dict[tuple[str, str], tuple[Event, Decision | None]]:
        """The batch's evals already in the store (re-sent reports), with their decisions: one
        query for the whole batch, rather than one per report."""
        jobs = {job_id for job_id, _, _ in reports}
        keys = {f"eval:{report.step}" for _, _, report in reports}
        events = s.scalars(select(Event).where(Event.job_id.in_(jobs), Event.dedup.in_(keys)))
        found = {(e.job_id, e.dedup): e for e in events}
        decisions = {}
        if found:
            seqs = {e.seq for e in found.values()}
            query = select(Decision).where(Decision.job_id.in_(jobs), Decision.event_seq.in_(seqs))
            decisions = {(d.job_id, d.event_seq): d for d in s.scalars(query)}
        return {k: (e, decisions.get((e.job_id, e.seq))) for k, e in found.items()}

    def _ingest(
        self,
        s: Session,
        job_id: str,
        token: str,
        report: EvalReport,
        stored: dict[tuple[str, str], tuple[Event, Decision | None]],
        observed: list[tuple[str, EvalReport]],
    ) -> dict[str, Any]:
        job = self._reporting_job(s, job_id, token)
        active = self.platform.active[job_id]
        dedup = f"eval:{report.step}"
        if (job_id, dedup) in stored:  # a re-sent report (a retry, or a resumed run replaying)
            event, decision = stored[job_id, dedup]
            return self._answer(job, event, decision, duplicate=True)
        event = self.platform.append(s, job, "eval", report.model_dump(mode="json"), dedup=dedup)
        if report.checkpoint is not None:
            self._add_checkpoint(s, job, report.step, report.checkpoint, self._eval_metrics(report))
        active.eval_seqs.append(event.seq)
        observed.append((job_id, report))
        decision = None
        if job.status != states.STOPPING:
            verdict = self.platform.rules.observe(active.rule, eval_event(job, report))
            decision = self._decide(s, job, active, event, verdict)
        stored[job_id, dedup] = (event, decision)
        return self._answer(job, event, decision, duplicate=False)

    @staticmethod
    def _eval_metrics(report: EvalReport) -> dict[str, float]:
        metrics = {"eval": report.score, "proxy": report.proxy, "loss": report.loss}
        return {k: v for k, v in metrics.items() if v is not None}

    def _decide(
        self, s: Session, job: Job, active: Active, event: Event, verdict: RuleDecision
    ) -> Decision:
        window = evidence_window(active.rule)
        evidence = active.eval_seqs[-window:] if window else list(active.eval_seqs)
        decision = Decision(
            id=new_id("dec"),
            job_id=job.id,
            event_seq=event.seq,
            rule=active.rule.rule,
            params=active.rule.params.model_dump(),
            stop=verdict.stop,
            shadow=active.rule.shadow,
            reason=verdict.reason,
            evidence=evidence,
            created_at=time.time(),
        )
        s.add(decision)
        if verdict.stop:
            self.platform.append(
                s,
                job,
                "decision",
                {
                    "decision": decision.id,
                    "rule": decision.rule,
                    "stop": True,
                    "reason": verdict.reason,
                    "shadow": decision.shadow,
                    "evidence": evidence,
                },
                level="warning",
            )
        if verdict.stop and not active.rule.shadow:
            job.intent = active.intent = states.EARLY_STOP
            job.stop_reason = f"{active.rule.rule}: {verdict.reason}"
            self.platform.set_status(s, job, states.STOPPING, job.stop_reason)
            active.kill_at = time.time() + self.platform.grace_s
        return decision

    @staticmethod
    def _answer(
        job: Job, event: Event, decision: Decision | None, duplicate: bool
    ) -> dict[str, Any]:
        stop = job.status == states.STOPPING
        return {
            "event_seq": event.seq,
            "duplicate": duplicate,
            "action": "stop" if stop else "continue",
            "reason": job.stop_reason if stop else None,
            "decision": None
            if decision is None
            else {
                "id": decision.id,
                "rule": decision.rule,
                "stop": decision.stop,
                "shadow": decision.shadow,
                "reason": decision.reason,
            },
        }

    def checkpoint(self, job_id: str, token: str, report: CheckpointReport) -> None:
        with self.platform.lock, self.platform.store.transaction() as s:
            job = self._reporting_job(s, job_id, token)
            metrics = dict(report.metrics)
            if "eval" not in metrics:  # the eval of the same step, if the job reported one
                stored = s.scalar(
                    select(Event).where(
                        Event.job_id == job_id, Event.dedup == f"eval:{report.step}"
                    )
                )
                if stored is not None:
                    metrics["eval"] = stored.data["score"]
            self._add_checkpoint(s, job, report.step, report.path, metrics)

    def _add_checkpoint(
        self, s: Session, job: Job, step: int, path: str, metrics: dict[str, float]
    ) -> None:
        """Record a checkpoint once per step; the best by eval score is the one delivered."""
        if s.scalar(select(Checkpoint).where(Checkpoint.job_id == job.id, Checkpoint.step == step)):
            return
        active = self.platform.active[job.id]
        checkpoint = Checkpoint(
            id=new_id("ckpt"),
            job_id=job.id,
            run_id=active.run_id or "",
            step=step,
            path=path,
            metrics=metrics,
            is_best=False,
            created_at=time.time(),
        )
        s.add(checkpoint)
        self.platform.append(
            s, job, "checkpoint", {"checkpoint": checkpoint.id, "step": step, "path": path}
        )
        score = metrics.get("eval")
        if score is not None and score > active.best_eval:
            active.best_eval = score
            s.execute(update(Checkpoint).where(Checkpoint.job_id == job.id).values(is_best=False))
            checkpoint.is_best = True
