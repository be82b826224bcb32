"""The platform's core: admission and the job lifecycle (launch, preempt, end of a run).

One `Platform` object owns the in-memory side (the live table the policies see, the stop rules'
per-job state, the Ray handles of running jobs) and keeps it in step with the store, which is the
record: every change is committed before the caller is answered, and `recovery.recover` rebuilds
the in-memory side from the store after a restart. The scheduling loop (`loop.py`) drives the
lifecycle; jobs' reports go through `reports.py`. Every write happens under `self.lock`, and
every status change through `transition`, which holds each job to `states.TRANSITIONS`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from rlguard.errors import InputError
from rlguard.platform import budget, jobspec, quotes, states
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Checkpoint, DecisionRecord, Event, Job, Run, Tenant
from rlguard.platform.envcache import JobPython
from rlguard.platform.executor import RayExecutor, RunHandle
from rlguard.platform.finetune.base_models import RegisteredModel
from rlguard.platform.jobenv import Software
from rlguard.platform.jobhome import JobHome
from rlguard.platform.jobview import JobViews
from rlguard.platform.keys import JOB_TOKEN_PREFIX, digest, new_id, new_secret
from rlguard.platform.live_table import LiveTable
from rlguard.platform.log_format import about
from rlguard.platform.outcome import measured, no_eval_note
from rlguard.platform.raystate import STARTING, UNPLACED
from rlguard.platform.rules import JobRule, StopRules, decision_row, stop_event_data
from rlguard.platform.runlogs import log_key, read_log
from rlguard.platform.sandbox import UID_BASE
from rlguard.platform.schemas import JobCreate
from rlguard.platform.shipping import Shipment, ship
from rlguard.platform.store import Store


def freed_gpu_hours(gpus: int, executed_s: float, progress: float) -> float:
    """GPU-hours a stop freed: what the job would still have used had it run to its end, from
    its own pace, gpus x executed_s x (1 - p) / p with p its progress at the stop (the same
    estimate the simulator's wasted compute rests on, from what the platform observed)."""
    if not 0 < progress < 1:
        return 0.0
    return gpus * executed_s * (1 - progress) / progress / 3600


log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
"""Lost runs after which a job whose runs keep getting lost (its actor or process could not start
or died without an exit code) fails instead of being requeued again."""

PLACE_TIMEOUT_S = 15.0
"""A run whose actor Ray has not created this long after its launch, and holds at no node that
can hold it (raystate.placement), is one Ray cannot place now (say a 2-GPU run on two 1-GPU
nodes): its actor is taken back and the job requeued. Doubles with each run of the job taken
back (`place_timeout`)."""

PLACE_TIMEOUT_MAX_S = 120.0
"""The longest a run waits for its actor: also for one whose worker is starting on a node that
can hold it (a burst of launches on a loaded node takes tens of seconds), and the bound of
`place_timeout`."""

PLACE_BACKOFF_S = 30.0
"""How long a job whose run could not be placed waits before it is launched again, unless the
cluster's capacity changes first."""


def place_timeout(unplaced_runs: int) -> float:
    """How long a job's run may wait to be placed after `unplaced_runs` of its runs were taken
    back unplaced: 15, 30, 60, 120 s."""
    return min(PLACE_TIMEOUT_S * 2**unplaced_runs, PLACE_TIMEOUT_MAX_S)


PAUSED_BY_USER = "paused by the user"

BEING = {
    states.EARLY_STOP: "being stopped by its rule",
    states.CANCEL: "being cancelled",
    states.PREEMPT: "being preempted",
    states.PAUSE: "being paused",
}
"""A stopping job's intent, as a refusal names it."""


def stored_newest_first(s: Session, job_id: str) -> tuple[str, ...]:
    """The store keys of a job's recorded checkpoints still held there, newest first (by step,
    then by when recorded): what a new attempt restores from (restore.py)."""
    keys = s.scalars(
        select(Checkpoint.store_key)
        .where(Checkpoint.job_id == job_id, Checkpoint.store_key.is_not(None))
        .order_by(Checkpoint.step.desc(), Checkpoint.created_at.desc())
    )
    return tuple(k for k in keys if k is not None)


def _end_reason(placed: bool, exit_code: int | None, intent: str | None) -> str:
    """Why a run ended, as its row records it."""
    if not placed:
        return "unplaced"
    return "lost" if exit_code is None else (intent or "exited")


class NotFound(LookupError):
    """The job does not exist for this caller (another tenant's job is reported the same way)."""


class Conflict(RuntimeError):
    """The request does not fit the job's state (e.g. a report from a finished job)."""


class IllegalTransition(Conflict):
    """A status change `states.TRANSITIONS` does not allow: a bug where the platform itself asked
    for it, a 409 where a tenant's request did."""

    def __init__(self, job_id: str, previous: str | None, status: str) -> None:
        super().__init__(f"job {job_id} cannot go from {previous or 'new'} to {status}")


def not_now(job: Job, action: str) -> Conflict:
    """A pause or resume the job's status does not allow (a 409), saying what it is doing."""
    if job.status in states.TERMINAL:
        doing = f"has already ended ({job.status})"
    elif job.status == states.STOPPING:
        doing = f"is {BEING.get(job.intent or '', 'stopping')}"
    else:
        doing = f"is {job.status}"
    return Conflict(f"job {job.id} cannot be {action}d: it {doing}")


class Unauthorized(PermissionError):
    """A job token that is not the current run's."""


@dataclass
class Active:
    """What the platform holds in memory for a job that is not finished."""

    job_id: str
    tenant_id: str
    kind: str
    job_kind: str
    gpus: int
    cpus: float
    rule: JobRule
    status: str
    attempt: int = 0
    intent: str | None = None
    run_id: str | None = None
    handle: RunHandle | None = None
    kill_at: float | None = None  # when a job told to stop is SIGTERMed if still running
    eval_seqs: list[int] = field(default_factory=list)
    eval_steps: set[int] = field(default_factory=set)  # the steps whose evals are stored
    best_eval: float = -math.inf
    queue_position: int | None = None
    lost_runs: int = 0
    fence: str | None = None  # its last run, until Ray says that run's actor is dead
    held_until: float = 0.0  # its last run could not be placed: not launched again before
    unplaced_runs: int = 0  # its runs taken back unplaced since one of them last started
    budget_gpu_hours: float | None = None
    # its first eval this server saw (after a restart: the first since), where its budget's pace
    # is measured from
    pace_since: budget.Mark | None = None


class Platform:
    def __init__(
        self,
        store: Store,
        executor: RayExecutor,
        rules: StopRules,
        data_dir: Path,
        url: str,
        views: JobViews,
        grace_s: float = 30.0,
        store_uri: str | None = None,
        software: Software | None = None,
        models: dict[str, RegisteredModel] | None = None,
    ) -> None:
        self.store, self.executor, self.rules = store, executor, rules
        self.software = software or Software()  # what tenants may ship, and from where
        self.models = models or {}  # the operator's base models, by name
        self.store_uri = store_uri  # the artifact store's: a new attempt restores from it
        self.artifacts = None if store_uri is None else ArtifactStore(store_uri)  # runs' logs
        self.data_dir, self.url, self.grace_s = data_dir.resolve(), url, grace_s
        self.views = views  # what each job sees, and as whom it runs
        self.lock = threading.RLock()
        self.table = LiveTable()
        self.active: dict[str, Active] = {}
        self.dirty = threading.Event()  # a scheduling pass is due
        self.capacity = executor.capacity()  # Ray's alive nodes' GPUs: `refresh_capacity`

    # ----- helpers ---------------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        """Where a node that sets no root of its own keeps the job's directory (jobhome.py)."""
        return self.data_dir / "jobs" / job_id

    def log_path(self, job_id: str, attempt: int) -> Path:
        """The platform's, beside the job's directory: the job cannot touch it."""
        return self.data_dir / "logs" / job_id / f"attempt-{attempt}.log"

    def config_path(self, job_id: str) -> Path:
        return self.data_dir / "configs" / f"{job_id}.yaml"

    @staticmethod
    def next_event(
        job: Job, type_: str, data: dict[str, Any], level: str = "info", dedup: str | None = None
    ) -> dict[str, Any]:
        """A job's next event, as a row. Its seq comes from the job row, which only this process
        writes, and only under `self.lock`: one writer at a time, so seqs never collide."""
        job.last_seq += 1
        return {
            "job_id": job.id,
            "seq": job.last_seq,
            "created_at": time.time(),
            "level": level,
            "type": type_,
            "data": data,
            "dedup": dedup,
        }

    @classmethod
    def append(
        cls, session: Session, job: Job, type_: str, data: dict[str, Any], level: str = "info"
    ) -> Event:
        event = Event(**cls.next_event(job, type_, data, level))
        session.add(event)
        return event

    def transition(
        self, session: Session, job: Job, status: str, reason: str | None = None
    ) -> None:
        """Change a job's status and record its `state` event: the one way a status changes, so
        every job follows `states.TRANSITIONS` (as Ray Jobs' `put_status`, which refuses to leave
        a terminal state). A job leaving its GPUs for the queue records `preempted` first. An
        illegal change raises IllegalTransition before anything is changed."""
        previous = job.status
        if status not in states.TRANSITIONS.get(previous, ()):
            raise IllegalTransition(job.id, previous, status)
        job.status = status
        if previous is states.NEW:  # its row is written before the events that name it
            session.add(job)
            session.flush()
        if previous in states.ON_GPUS and status == states.QUEUED:
            self.append(session, job, "state", {"status": states.PREEMPTED, "reason": reason})
        data = {"status": status, "previous": previous}
        if reason:
            data["reason"] = reason
        self.append(session, job, "state", data)
        if job.id in self.active:
            self.active[job.id].status = status

    # ----- tenants' requests -----------------------------------------------------------------

    def submit(
        self, tenant: Tenant, body: JobCreate, attach: Callable[[str], Any] | None = None
    ) -> str:
        """Validate and queue a job; the store holds it (committed) when this returns.
        `attach`: a row of the job's (given its id) committed with it, as OpenAI's fine-tuning
        job is over the job that runs it, so neither is ever stored without the other."""
        job_id = new_id("job")
        job_dir = self.job_dir(job_id)
        admitted = jobspec.admit_spec(body, job_dir, self.views.vet(tenant.name, job_dir))
        rule = self.rules.resolve(body.stop_policy.model_dump(exclude_none=True))
        if body.gpus > tenant.quota_gpus:
            raise InputError(
                f"gpus: {body.gpus} exceeds tenant {tenant.name!r}'s quota of {tenant.quota_gpus}"
            )
        if body.gpus > self.capacity:
            raise InputError(f"gpus: {body.gpus} exceeds the cluster's {self.capacity} GPUs")
        shipment = ship(body, tenant.id, self.software, self.artifacts)
        if shipment.environment is not None:
            admitted.spec["environment"] = shipment.environment
        quoted = quotes.quote_job(body, admitted.spec)
        now = time.time()
        estimate = quotes.estimate_s(body, quoted)
        with self.lock, self.store.transaction() as s:
            job = Job(
                id=job_id,
                tenant_id=tenant.id,
                kind=admitted.kind,
                job_kind=admitted.job_kind,
                spec=admitted.spec,
                gpus=body.gpus,
                cpus=body.cpus,
                gpu_seconds=0.0,
                gpu_hours_freed=0.0,
                estimate_s=estimate,
                stop_policy=rule.as_dict(),
                last_seq=0,
                created_at=now,
                sandbox=self.views.label,
                quote=quoted,
            )
            self.transition(s, job, states.VALIDATING)
            if attach is not None:
                s.add(attach(job_id))
            if self._validated(s, job, shipment):
                self.transition(s, job, states.QUEUED)
        if job.status != states.QUEUED:
            return job_id
        with self.lock:
            self._track(job, rule, attempt=0)
        self.dirty.set()
        return job_id

    def _validated(self, s: Session, job: Job, shipment: Shipment) -> bool:
        """Record what resolving the job's requirements found; a job whose requirements did not
        resolve fails here, never queued."""
        event = shipment.event()
        if event is not None:
            self.append(s, job, "environment", *event)
        if shipment.unresolved is None:
            return True
        job.error, job.finished_at = shipment.error(), time.time()
        self.transition(s, job, states.FAILED, job.error["message"][:300])
        return False

    def _track(self, job: Job, rule: JobRule, attempt: int) -> Active:
        active = Active(
            job_id=job.id,
            tenant_id=job.tenant_id,
            kind=job.kind,
            job_kind=job.job_kind,
            gpus=job.gpus,
            cpus=job.cpus,
            rule=rule,
            status=job.status,
            attempt=attempt,
            intent=job.intent,
            budget_gpu_hours=job.spec.get("budget_gpu_hours"),
        )
        self.active[job.id] = active
        self.table.add(job.id, job.job_kind, job.gpus, job.created_at, job.estimate_s)
        return active

    def active_job(self, job_id: str) -> Active:
        """What the platform holds in memory for an unfinished job (KeyError for any other)."""
        return self.active[job_id]

    def resync(self, job: Job) -> Active:
        """Take a job's status and intent back from the store (a batch that failed to commit may
        have changed them in memory only); only a job stopping early keeps its kill deadline."""
        active = self.active[job.id]
        active.status, active.intent = job.status, job.intent
        if job.intent != states.EARLY_STOP:
            active.kill_at = None
        return active

    def record_eval(
        self, job_id: str, progress: float, loss: float | None, now: float | None
    ) -> None:
        """An eval, as the policies' view reads it (SLAQ its loss over GPU time): `now` places
        its loss at the job's GPU time then; an eval replayed after a restart (None) at 0."""
        executed = 0.0 if now is None else self.table.executed_s(job_id, now)
        self.table.observe(job_id, progress, loss, executed)

    # ----- after a restart (called by `recovery.recover`) ------------------------------------

    def restore(self, job: Job, runs: Sequence[Run]) -> None:
        """Hold an unfinished job in memory again, with its ended runs' GPU time."""
        active = self._track(job, self.rules.resolve(job.stop_policy), attempt=len(runs))
        active.lost_runs = sum(run.end_reason == "lost" for run in runs)
        if runs:
            active.run_id = active.fence = runs[-1].id
        for run in runs:
            if run.ended_at is not None and run.running_at is not None:
                self.table.bank(job.id, run.ended_at - run.running_at)
        if job.status == states.PAUSED:  # held, but out of the policies' sight until resumed
            self.table.leave(job.id, time.time(), requeue=False)

    def reattach(self, job: Job, run: Run) -> bool:
        """Take back a job's current run if Ray still has its actor; False if it is lost (for
        `run_ended` to requeue or finish the job)."""
        active = self.active[job.id]
        active.run_id = run.id
        active.handle = self.executor.reattach(run.id)
        if active.handle is None:
            return False
        if run.running_at is not None:  # else it is still starting: `run_started` will say
            self.table.start(job.id, run.running_at)
        if job.intent == states.EARLY_STOP:
            active.kill_at = time.time() + self.grace_s
        return True

    def cancel(self, job_id: str) -> None:
        with self.lock, self.store.transaction() as s:
            job = s.get(Job, job_id)
            if job is None:
                raise NotFound(job_id)
            if job.status in states.TERMINAL:
                raise Conflict(f"job {job_id} has already ended ({job.status})")
            active = self.active[job_id]
            if job.status in (states.QUEUED, states.PAUSED):
                self._finish(s, job, states.CANCELLED, "cancelled by the user")
                return
            if job.intent in (None, states.PREEMPT, states.PAUSE):
                if job.status != states.STOPPING:
                    self.transition(s, job, states.STOPPING, "cancelled by the user")
                job.intent = active.intent = states.CANCEL
        if active.handle is not None:
            self.executor.stop(active.handle, self.grace_s)

    def pause(self, job_id: str) -> None:
        """Take a job off the cluster until `resume` (OpenAI's pause): a queued job is paused at
        once; one on its GPUs is stopped as a preempted one is (SIGTERM: a trainer checkpoints;
        SIGKILL after the grace) and is paused when its run ends, or succeeded if it finished
        first. A job being preempted is paused instead of requeued."""
        with self.lock:
            with self.store.transaction() as s:
                job = s.get(Job, job_id)
                if job is None:
                    raise NotFound(job_id)
                active = self.active.get(job_id)
                on_gpus = job.status in (states.STARTING, states.RUNNING)
                preempting = job.status == states.STOPPING and job.intent == states.PREEMPT
                if active is None or not (job.status == states.QUEUED or on_gpus or preempting):
                    raise not_now(job, "pause")
                if job.status == states.QUEUED:
                    self.transition(s, job, states.PAUSED, PAUSED_BY_USER)
                else:
                    if on_gpus:
                        self.transition(s, job, states.STOPPING, PAUSED_BY_USER)
                    job.intent = active.intent = states.PAUSE
            if job.status == states.PAUSED:
                self._left_paused(active, time.time())
                self.dirty.set()
        if on_gpus and active.handle is not None:  # a preempted one was told already
            self.executor.stop(active.handle, self.grace_s)

    def resume(self, job_id: str) -> None:
        """Queue a paused job again; its next attempt restores its newest stored checkpoint
        (`launch`), as a preempted job's does."""
        with self.lock:
            with self.store.transaction() as s:
                job = s.get(Job, job_id)
                if job is None:
                    raise NotFound(job_id)
                if job.status != states.PAUSED:
                    raise not_now(job, "resume")
                self.transition(s, job, states.QUEUED, "resumed by the user")
            self.table.rejoin(job_id, time.time())
        self.dirty.set()

    def _left_paused(self, active: Active, now: float) -> None:
        """A paused job holds no place in the queue and is out of the policies' view; its GPU
        time is banked, so nothing is billed or counted against its budget while it is paused."""
        active.queue_position = None
        self.table.leave(active.job_id, now, requeue=False)

    # ----- the lifecycle (called by the scheduling loop) -------------------------------------

    def launch(self, job_id: str) -> None:
        """Start a queued job's next attempt: the run is committed before Ray is asked, so a
        crash in between leaves a run to requeue, never an actor the store does not know."""
        active = self.active[job_id]
        token = new_secret(JOB_TOKEN_PREFIX)
        with self.store.transaction() as s:
            job = s.get(Job, job_id)
            attempt = active.attempt + 1
            run = Run(
                id=new_id("run"),
                job_id=job_id,
                attempt=attempt,
                status="running",
                started_at=time.time(),
                epoch=self.store.epoch,
            )
            s.add(run)
            if job.uid is None:  # one uid per job, for all its attempts; never reused
                newest = s.scalar(select(func.max(Job.uid)))
                job.uid = UID_BASE if newest is None else newest + 1
            job.sandbox = self.views.label
            tenant = s.get(Tenant, job.tenant_id).name
            job.token_digest = digest(token)  # the previous run's was revoked when it ended
            self.transition(s, job, states.STARTING, f"attempt {attempt}")
            restore = stored_newest_first(s, job_id) if attempt > 1 else ()
        active.attempt, active.run_id = attempt, run.id
        active.queue_position = None
        env = {
            "RLGUARD_URL": self.url,
            "RLGUARD_JOB_ID": job_id,
            "RLGUARD_JOB_TOKEN": token,
            "RLGUARD_RUN_ID": run.id,
            "RLGUARD_ATTEMPT": str(attempt),
            "RLGUARD_JOB_KIND": active.job_kind,
            "PYTHONUNBUFFERED": "1",
            **job.spec.get("env", {}),
        }
        config = self.config_path(job_id)
        home = JobHome(
            job_id,
            str(self.data_dir / "jobs"),
            job.uid if self.views.sandboxed else None,
            job.spec["config"] if job.kind == "train" else None,
            str(config),
            self.store_uri,
            restore,
            log_key=log_key(job.tenant_id, job_id, attempt),
            working_dir=self._working_dir_key(job),
        )
        environment = job.spec.get("environment")
        python = None if environment is None else JobPython(environment, self.software.cache_mb)
        try:
            sandbox = self.views.sandbox(
                job.uid,
                tenant,
                self.job_dir(job_id),  # the node's own, once its actor has prepared it
                active.cpus,
                job.spec.get("memory_mb"),
                files=(str(config),) if job.kind == "train" else (),
            )
            active.handle = self.executor.launch(
                run.id,
                jobspec.argv(job.kind, job.spec, config),
                env,
                home,
                self.log_path(job_id, attempt),
                active.gpus,
                active.cpus,
                sandbox,
                job.spec.get("watch"),
                self.grace_s,
                python,
            )
        except Exception:  # Ray refused the actor: the run is lost, as if it had died at once
            log.exception("launching %s failed", run.id, extra=about(job_id, run.id))
            self.run_ended(job_id, None)

    @staticmethod
    def _working_dir_key(job: Job) -> str | None:
        sha = job.spec.get("working_dir")
        if sha is None:
            return None
        return ArtifactStore.working_dir_key(job.tenant_id, sha.removeprefix("sha256:"))

    def may_launch(self, job_id: str, now: float) -> bool:
        """Fencing: a queued job starts again only once Ray says its last run's actor is dead
        (that run's token was revoked when it ended), and not while held after a run that could
        not be placed."""
        active = self.active[job_id]
        if now < active.held_until:
            return False
        if active.fence is not None and self.executor.gone(active.fence):
            active.fence = None
        return active.fence is None

    def run_started(
        self,
        job_id: str,
        pid: int,
        node_id: str,
        restored: str | None = None,
        disk: dict[str, Any] | None = None,
        environment: dict[str, Any] | None = None,
    ) -> None:
        """The run's actor spawned the job's process: from now on it is running, billed and on
        its GPUs in the policies' view (a job stopping meanwhile stays stopping). `restored`:
        the stored checkpoint it starts from, said in its running event; `disk`: how its node
        holds its disk limit (volume.py), on the job; `environment`: whether its node built the
        job's environment or had it cached, and how long that took (said in the event)."""
        now = time.time()
        with self.store.transaction() as s:
            job, run = s.get(Job, job_id), s.get(Run, self.active[job_id].run_id)
            if run.running_at is not None:  # reattached after a restart: known already
                return
            self.active[job_id].unplaced_runs = 0
            run.running_at, run.pid, run.node_id = now, pid, node_id
            job.started_at = job.started_at or now
            job.disk = disk
            self.dirty.set()  # a launch held back while runs were starting may go now
            if job.status == states.STARTING:
                reason = f"on node {node_id[:12]}"
                if restored is not None:
                    reason += f", from {restored}"
                if environment is not None:
                    how = "built" if environment["built"] else "cached"
                    reason += f", its environment {how} in {environment['seconds']} s"
                self.transition(s, job, states.RUNNING, reason)
        self.table.start(job_id, now)

    def take_back_unplaced(self, now: float) -> None:
        """Runs Ray has not placed in `place_timeout`, or not started in PLACE_TIMEOUT_MAX_S:
        their actors are killed (they never held a GPU) and their jobs requeued, held back for
        PLACE_BACKOFF_S."""
        for active in list(self.active.values()):
            handle = active.handle
            timeout = place_timeout(active.unplaced_runs)
            if handle is None or handle.running or now - handle.launched_at < timeout:
                continue
            where = self.executor.placement(handle, active.gpus, active.cpus)
            if where == STARTING and now - handle.launched_at >= PLACE_TIMEOUT_MAX_S:
                where, timeout = UNPLACED, PLACE_TIMEOUT_MAX_S
            if where == UNPLACED:
                why = f"not placed by Ray in {timeout:.0f} s"
                log.warning(
                    "run %s %s", active.run_id, why, extra=about(active.job_id, active.run_id)
                )
                active.held_until = now + PLACE_BACKOFF_S
                active.unplaced_runs += 1
                self.run_ended(active.job_id, None, placed=False, why=why)

    def refresh_capacity(self) -> None:
        """The GPUs of Ray's alive nodes now: a node that left or joined changes what the
        scheduler hands out, and releases the jobs held after a run could not be placed."""
        capacity = self.executor.capacity()
        if capacity == self.capacity:
            return
        log.info("capacity: %d GPUs -> %d (Ray's alive nodes)", self.capacity, capacity)
        self.capacity = capacity
        for active in self.active.values():
            active.held_until = 0.0
        self.dirty.set()

    def preempt(self, job_id: str) -> None:
        active = self.active[job_id]
        with self.store.transaction() as s:
            job = s.get(Job, job_id)
            self.transition(s, job, states.STOPPING, "preempted by the scheduler")
            job.intent = active.intent = states.PREEMPT
        if active.handle is not None:
            self.executor.stop(active.handle, self.grace_s)

    def stop_early(self, session: Session, job: Job, reason: str) -> None:
        """Its stop rule decided (in `reports.py`): the job is told to stop at this eval, and
        SIGTERMed if it has not exited after the grace period (`enforce_grace`)."""
        active = self.active[job.id]
        job.stop_reason = reason
        self.transition(session, job, states.STOPPING, reason)
        job.intent = active.intent = states.EARLY_STOP
        active.kill_at = time.time() + self.grace_s

    def run_ended(
        self, job_id: str, exit_code: int | None, placed: bool = True, why: str | None = None
    ) -> None:
        """A run's process exited, or Ray says its actor is dead (exit_code None: lost), or Ray
        could not place it (`placed` False); `why`: the platform's own reason, if it has one
        (the job's error then, whatever its log ends with; its requeue's reason if it is
        requeued). Its token is revoked with the change."""
        active = self.active[job_id]
        now = time.time()
        if active.handle is not None:
            self.executor.release(active.handle)
        with self.store.transaction() as s:
            job = s.get(Job, job_id)
            run = s.get(Run, active.run_id)
            lost = exit_code is None and active.intent is None and placed
            unplaced = not placed and active.intent in (None, states.PREEMPT)
            requeue = (active.intent == states.PREEMPT and exit_code != 0) or lost or unplaced
            paused = active.intent == states.PAUSE and exit_code != 0  # exit 0: it finished
            run.status, run.ended_at, run.exit_code = "ended", now, exit_code
            if run.running_at is not None:  # only what ran is billed
                job.gpu_seconds += job.gpus * (now - run.running_at)
            run.end_reason = _end_reason(placed, exit_code, active.intent)
            job.token_digest = None
            active.fence = run.id
            active.lost_runs += lost
            if lost and active.lost_runs >= MAX_ATTEMPTS:  # its process never holds: stop trying
                requeue = False
                message = f"{MAX_ATTEMPTS} runs lost (Ray said their actor or node died)"
                job.error = {"code": "run_lost", "message": message, "param": None}
                self._finish(s, job, states.FAILED, message)
            elif requeue:
                preempted = active.intent == states.PREEMPT
                reason = "preempted" if preempted else why or "run lost"
                self.transition(s, job, states.QUEUED, reason)
                job.intent = active.intent = None
            elif paused:
                self.transition(s, job, states.PAUSED, PAUSED_BY_USER)
                job.intent = active.intent = None
            elif active.intent == states.EARLY_STOP:
                progress = self.table.last_progress(job_id)
                job.gpu_hours_freed = freed_gpu_hours(
                    job.gpus, job.gpu_seconds / job.gpus, progress
                )
                self._finish(s, job, states.EARLY_STOPPED, job.stop_reason)
            elif active.intent == states.CANCEL:
                self._finish(s, job, states.CANCELLED, "cancelled by the user")
            elif why is not None:
                job.error = {"code": "resource_limit", "message": why, "param": None}
                self._finish(s, job, states.FAILED, why)
            elif exit_code == 0:
                self._finish(s, job, states.SUCCEEDED)
            else:
                job.error = {
                    "code": "exit_code",
                    "message": self._failure_message(job, active.attempt, exit_code),
                    "param": None,
                }
                self._finish(s, job, states.FAILED, job.error["message"])
        active.handle, active.kill_at = None, None
        if requeue:
            self.table.leave(job_id, now, requeue=True)
        elif paused:
            self._left_paused(active, now)
        if exit_code is None and placed:  # its node may be the one that died: count it out
            self.refresh_capacity()  # before the next pass hands that node's GPUs out again
        self.dirty.set()

    def _failure_message(self, job: Job, attempt: int, exit_code: int | None) -> str:
        """With the log's last line, read wherever the run left it (runlogs.py): its actor has
        just been taken back, so from the server's disk or the store."""
        text = read_log(self, job.tenant_id, job.id, attempt, ask_actor=False)
        lines = text.strip().splitlines()
        last = f": {lines[-1][:300]}" if lines else ""
        return f"the job exited with code {exit_code}{last}"

    def _finish(self, s: Session, job: Job, status: str, reason: str | None = None) -> None:
        job.finished_at = time.time()
        job.token_digest = None
        job.measured = measured(s, job, self.table.last_progress(job.id))
        note = no_eval_note(s, job)  # a watched job's 0 evals: in its state, and error if any
        if note is not None:
            reason = note if reason is None else f"{reason}; {note}"
            if job.error is not None:
                job.error = {**job.error, "message": f"{job.error['message']}; {note}"}
        self.transition(s, job, status, reason)
        self.active.pop(job.id, None)
        self.table.leave(job.id, job.finished_at, requeue=False)
        self.rules.job_ended(job.id)
        self.dirty.set()

    def enforce_budgets(self, now: float) -> None:
        """Stop each running job that has spent its GPU-hour budget, whether or not it reports
        evals (one that does is stopped sooner, on its projected pace: reports.py). The
        decision rests on the `decision` event it records."""
        for active in list(self.active.values()):
            if active.budget_gpu_hours is None or active.status != states.RUNNING:
                continue
            gpu_hours = active.gpus * self.table.executed_s(active.job_id, now) / 3600
            spent = budget.Spent(gpu_hours, active.budget_gpu_hours)
            if not spent.over:
                continue
            rule = budget.decision_rule(spent.budget_gpu_hours)
            with self.store.transaction() as s:
                job = s.get(Job, active.job_id)
                event = self.append(s, job, "decision", {}, "warning")
                decision = decision_row(
                    job.id, event.seq, rule, True, spent.reason(), spent.evidence()
                )
                event.data = stop_event_data(decision)
                s.add(DecisionRecord(**decision))
                self.stop_early(s, job, f"{budget.RULE}: {spent.reason()}")

    def enforce_grace(self, now: float) -> None:
        """SIGTERM (then SIGKILL) the early-stopped jobs that did not exit by themselves."""
        for active in list(self.active.values()):
            if active.kill_at is not None and now >= active.kill_at and active.handle:
                active.kill_at = None
                self.executor.stop(active.handle, self.grace_s)

    def collect(self) -> None:
        """Take in the runs whose process started, and finish those whose process exited or
        that Ray says are dead."""
        handles = [a.handle for a in self.active.values() if a.handle is not None]
        by_run = {a.run_id: a.job_id for a in self.active.values()}
        for handle, started in self.executor.started(handles):
            job_id = by_run[handle.run_id]
            self.run_started(
                job_id,
                started["pid"],
                started["node_id"],
                started["restored"],
                started["disk"],
                started.get("environment"),
            )
        for handle, exited in self.executor.finished(handles):
            code, why = (None, None) if exited is None else (exited.code, exited.why)
            self.run_ended(by_run[handle.run_id], code, why=why)
        self.take_back_unplaced(time.time())
