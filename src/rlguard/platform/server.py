"""`rlguard serve`: the store, Ray, the scheduling loop and the HTTP API in one process.

On a PostgreSQL store several servers may run: the one holding the control lease (lease.py)
leads as described below, the others forward requests to it (forward.py) until they take over.

Start: open (and migrate) the store, connect to Ray (the given address, or this data directory's
local head, started if needed), rebuild memory from the store and reconcile with Ray, start the
scheduling loop, serve HTTP. A graceful stop (SIGINT/SIGTERM) preempts the running jobs
cooperatively (they checkpoint and are requeued for the next start) and stops a local head; a
killed server leaves the head and its jobs running, and the next start reattaches them.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from rlguard.cluster.registry import RuleParams, build_policy
from rlguard.errors import InputError
from rlguard.platform import states
from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore, default_uri
from rlguard.platform.deposits import Deposits
from rlguard.platform.executor import RayExecutor
from rlguard.platform.finetune.base_models import RegisteredModel
from rlguard.platform.forward import Forward, Switch
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.job_writes import JobWrites, WriteLimits
from rlguard.platform.jobenv import Software
from rlguard.platform.jobview import Defaults, JobViews
from rlguard.platform.lease import RENEW_S, TTL_S, Lease, LeaseKeeper
from rlguard.platform.log_format import configure_logging
from rlguard.platform.loop import MAX_STARTING, SchedulerLoop
from rlguard.platform.mounts import Mount
from rlguard.platform.ray_head import local_head, stop_local_head, temp_dir
from rlguard.platform.recovery import recover
from rlguard.platform.reports import Reports
from rlguard.platform.rules import StopRules
from rlguard.platform.servers import SQLITE, hidden, recorded, serving
from rlguard.platform.service import Platform
from rlguard.platform.store import Store, default_url
from rlguard.platform.uploader import UploadLimits
from rlguard.platform.volume import unmount

log = logging.getLogger("rlguard.platform")


@dataclass(frozen=True)
class ServeConfig:
    data_dir: Path = Path("runs/platform")
    db: str | None = None
    address: str | None = None
    policy: str = "fifo"
    policy_args: dict[str, Any] = field(default_factory=dict)
    stop_rule: str = "evalstop"
    rule_params: RuleParams = field(default_factory=RuleParams)
    stop_kinds: frozenset[str] | None = None  # the job kinds stop rules judge (None: all)
    gpus: int = 2
    host: str = "127.0.0.1"
    port: int = 8321
    grace_s: float = 30.0
    mounts: tuple[Mount, ...] = ()
    models: tuple[RegisteredModel, ...] = ()  # registered base models (finetune/models.py)
    single_tenant: bool = False  # run jobs unsandboxed (the operator's explicit choice)
    limits: Defaults = field(default_factory=Defaults)
    storage: str | None = None  # the artifact store's URI [default: a directory in data_dir]
    keep_last: int = 2  # checkpoints kept in the store besides the best
    uploads: UploadLimits = field(default_factory=UploadLimits)  # per checkpoint and job
    writes: WriteLimits = field(default_factory=WriteLimits)  # each job's reports: rate, bytes
    software: Software = field(default_factory=Software)  # what tenants ship (jobenv.py)
    log_format: str = "text"  # or json: one object per line (log_format.py)
    public_url: str | None = None  # where jobs reach the platform: a load balancer's [url]
    max_starting: int = MAX_STARTING  # runs starting at once; the queue's next ones wait

    @property
    def storage_uri(self) -> str:
        return self.storage or default_uri(self.data_dir)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def jobs_url(self) -> str:
        return self.public_url or self.url


def open_store(cfg: ServeConfig) -> Store:
    cfg.data_dir.mkdir(parents=True, exist_ok=True)
    if not cfg.single_tenant:
        cfg.data_dir.chmod(0o700)  # the store, other jobs' files and Ray's token: root's alone
    return Store(cfg.db or default_url(cfg.data_dir))


def start_platform(
    cfg: ServeConfig, store: Store
) -> tuple[Platform, SchedulerLoop, EvalIngest, Deposits]:
    """Everything but the HTTP server, on `store` (fenced by this server's lease, if shared)."""
    artifacts = ArtifactStore(cfg.storage_uri)  # `rlguard serve` checked that it can use it
    policy = build_policy(cfg.policy, cfg.policy_args)
    rules = StopRules(policy, cfg.stop_rule, cfg.rule_params, cfg.stop_kinds)
    if cfg.address is None:
        address = local_head(cfg.data_dir, cfg.gpus, max(os.cpu_count() or 1, cfg.gpus))
        executor = RayExecutor(address, temp_dir(cfg.data_dir))
    else:
        executor = RayExecutor(cfg.address)
    jobs_url = cfg.jobs_url
    views = JobViews(not cfg.single_tenant, cfg.data_dir, list(cfg.mounts), jobs_url, cfg.limits)
    platform = Platform(
        store,
        executor,
        rules,
        cfg.data_dir,
        jobs_url,
        views,
        cfg.grace_s,
        cfg.storage_uri,
        cfg.software,
        {m.name: m for m in cfg.models},
    )
    counts = recover(platform)
    log.info("recovered %s", json.dumps(counts))
    loop = SchedulerLoop(platform, max_starting=cfg.max_starting)
    ingest = EvalIngest(Reports(platform, JobWrites(cfg.writes)))
    loop.start()
    ingest.start()
    return platform, loop, ingest, Deposits(platform, artifacts, cfg.keep_last, cfg.uploads)


def stop_platform(
    platform: Platform, loop: SchedulerLoop, ingest: EvalIngest, cfg: ServeConfig
) -> None:
    """Preempt running jobs cooperatively, wait for them to checkpoint, then let go of Ray."""
    loop.stop()
    with platform.lock:
        running = [a for a in platform.active.values() if a.status in states.ON_GPUS]
        for active in running:
            if active.intent is None:
                platform.preempt(active.job_id)
            elif active.handle is not None:
                platform.executor.stop(active.handle, platform.grace_s)
    deadline = time.time() + platform.grace_s + 5
    while time.time() < deadline and any(a.handle for a in platform.active.values()):
        with platform.lock:
            platform.collect()
        time.sleep(0.2)
    ingest.stop()
    platform.executor.shutdown()
    if cfg.address is None:
        stop_local_head(cfg.data_dir)
        unmount(cfg.data_dir)  # its jobs' volumes (volume.py): the node's runs are over


def deposed(why: str) -> None:
    """The lease is another server's: exit at once, leaving the jobs running for the new
    leader (a graceful stop would preempt them), as Kubernetes' controllers exit on losing it."""
    log.critical("this server no longer leads (%s): exiting; the leading server has its jobs", why)
    logging.shutdown()
    os._exit(1)


class Leadership:
    """This server's role: it leads (the platform started, behind `switch`) or stands by,
    forwarding to the leader, until the lease is its own. A store on SQLite has one server."""

    def __init__(self, cfg: ServeConfig, store: Store) -> None:
        self.cfg, self.store = cfg, store
        self.started: tuple[Platform, SchedulerLoop, EvalIngest, Deposits] | None = None
        self.lease: Lease | None = None
        self.keeper: LeaseKeeper | None = None
        if store.shared:
            holder = f"{socket.gethostname()}:{cfg.port} pid {os.getpid()}"
            self.lease = Lease(store.engine, holder, cfg.url, deposed)
            self.keeper = LeaseKeeper(self.lease, self.lead)
        self.switch = Switch(Forward(self.leader_url), self.health)

    def begin(self) -> None:
        """Lead at once if the store is this server's alone or its lease is free; else stand by
        (with a Ray cluster to share) or wait for a killed predecessor's lease to expire."""
        if self.lease is None:
            self.lead()
            return
        deadline = time.monotonic() + TTL_S + 2 * RENEW_S
        while not self.lease.try_acquire():
            if self.cfg.address is not None:
                log.info("standing by: another server leads; requests are forwarded to it")
                self.keeper.start()
                return
            if time.monotonic() > deadline:
                raise InputError(
                    f"another server leads the store {hidden(self.store.url)}: a standby server "
                    "needs --address, the Ray cluster the leading server runs its jobs on"
                )
            time.sleep(RENEW_S)
        self.keeper.start()
        self.lead()

    def lead(self) -> None:
        """Start the platform on the store, fenced by the lease, and answer the API with it."""
        if self.lease is not None:
            self.store.fence, self.store.epoch = self.lease.fence, self.lease.epoch
        started = start_platform(self.cfg, self.store)
        platform, loop, ingest, deposits = started
        app = create_app(platform, ingest, deposits)
        app.state.metrics.register(loop.pass_seconds)
        self.switch.app = app
        self.started = started  # healthy as the leader once its API answers
        # What the server has built so far (Ray, torch, SQLAlchemy, the app) lives as long as
        # it does: out of the collector's sight, a full collection no longer walks it. Measured
        # under load (benchmarks/bench_platform.py, 16 reporters): 8 full collections in 10 s,
        # each stalling every request for 107-140 ms, made the p99 of eval reports 116 ms
        # instead of 14.
        gc.freeze()
        log.info("leading (epoch %s)", self.store.epoch)

    def leader_url(self) -> str | None:
        """Where a standby forwards: None while this server takes over, or no server leads."""
        if self.keeper is None or self.lease.epoch is not None or self.keeper.leader is None:
            return None
        return self.keeper.leader[1]

    def health(self) -> dict[str, Any]:
        role = "leader" if self.started else "standby"
        if self.started is None and self.lease is not None and self.lease.epoch is not None:
            role = "starting"
        return {"role": role, "epoch": self.store.epoch}

    def end(self) -> None:
        """A graceful stop: the leader preempts its jobs, renewing the lease while they
        checkpoint (up to the grace period), then lets it go at once."""
        if self.started is not None:
            platform, loop, ingest, _ = self.started
            stop_platform(platform, loop, ingest, self.cfg)
        if self.keeper is not None:
            self.keeper.stop()
        if self.lease is not None:
            self.lease.release()
        self.store.close()


def refuse_a_second_sqlite_server(url: str) -> None:
    """One line and exit 2 where a server of this user already runs on this SQLite store: two
    would both schedule its jobs."""
    other = serving(url) if url.startswith(SQLITE) else None
    if other is not None:
        raise InputError(
            f"a server (pid {other.pid}, port {other.port}) already runs on the store "
            f"{other.store()}: a SQLite store has one server; a standby needs a PostgreSQL "
            "store (--db, docs/servers.md)"
        )


def serve(cfg: ServeConfig) -> None:
    refuse_a_second_sqlite_server(cfg.db or default_url(cfg.data_dir))
    configure_logging(cfg.log_format)
    leadership = Leadership(cfg, open_store(cfg))
    leadership.begin()
    own_logs = {"log_config": None} if cfg.log_format == "json" else {}  # uvicorn's lines too
    config = uvicorn.Config(
        leadership.switch, host=cfg.host, port=cfg.port, log_level="warning", **own_logs
    )
    server = uvicorn.Server(config)
    log.info(
        "serving on %s (policy %s; jobs sandboxed: %s; artifacts in %s)",
        cfg.url,
        cfg.policy,
        "no" if cfg.single_tenant else "yes",
        cfg.storage_uri,
    )
    try:
        with recorded(cfg.port, cfg.data_dir, leadership.store.url):
            server.run()
    finally:
        leadership.end()
