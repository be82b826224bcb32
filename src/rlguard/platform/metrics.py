"""The platform's Prometheus metrics: what operators watch next to Ray's, Kueue's and Kubernetes'.

Two sources. What the store holds (jobs by tenant and state, runs by how they ended, stop
decisions, uploaded bytes) is read at scrape time, as kube-state-metrics reads objects: every
server of one store reports the same numbers, and a restart loses none. They are gauges, since
deleting a job takes its rows with it. What only this server sees (eval reports as they are
answered, their latency, the decisions they carried) is counted in process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from rlguard.platform import states
from rlguard.platform.db import DecisionRecord, Job, Run, Tenant

if TYPE_CHECKING:
    from rlguard.platform.service import Platform

# an eval report's answer: a group commit on an idle server, up to a loaded store's fsyncs
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


PASS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def pass_seconds() -> Histogram:
    """The scheduling loop's passes, as Kueue's `admission_attempt_duration_seconds`: collecting
    ended runs, budgets and grace, the policy's order, admission, and starting the launches and
    preemptions it decided (Ray creates the actors after the pass)."""
    return Histogram(
        "rlguard_scheduling_pass_seconds",
        "One scheduling pass of the leading server, from collecting ended runs to its launches",
        buckets=PASS_BUCKETS,
        registry=None,
    )


class EvalCounts:
    """The eval reports this server answered: by outcome, with their latency from arrival to
    answer (queued, stored and decided in one commit), and the decisions they carried."""

    def __init__(self) -> None:
        self.reports = Counter(
            "rlguard_eval_reports",
            "Eval reports answered by this server, by outcome",
            ["outcome"],
            registry=None,
        )
        self.latency = Histogram(
            "rlguard_eval_report_seconds",
            "From an eval report's arrival to its answer, stored and decided",
            buckets=LATENCY_BUCKETS,
            registry=None,
        )
        self.decisions = Counter(
            "rlguard_decisions",
            "Stop rules' decisions on the evals this server stored, by rule and verdict",
            ["rule", "verdict", "shadow"],
            registry=None,
        )

    def answered(self, answer: dict[str, Any] | Exception, seconds: float) -> None:
        self.latency.observe(seconds)
        if isinstance(answer, Exception):
            self.reports.labels("refused").inc()
            return
        self.reports.labels("duplicate" if answer["duplicate"] else "stored").inc()
        if (decision := answer["decision"]) is not None and not answer["duplicate"]:
            verdict = "stop" if decision["stop"] else "continue"
            self.decisions.labels(decision["rule"], verdict, str(decision["shadow"]).lower()).inc()

    def failed(self, reports: int) -> None:
        """A batch that did not commit: each of its reports was answered with the error."""
        self.reports.labels("failed").inc(reports)

    def collectors(self) -> tuple[Collector, ...]:
        return (self.reports, self.latency, self.decisions)


class StoreCollector(Collector):
    """The store's and the scheduler's state, read at each scrape."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    def collect(self) -> Iterator[Metric]:
        jobs = GaugeMetricFamily(
            "rlguard_jobs", "Jobs by tenant and state", labels=["tenant", "state"]
        )
        runs = GaugeMetricFamily(
            "rlguard_runs", "Runs the store holds, by how they ended", labels=["reason"]
        )
        stops = GaugeMetricFamily(
            "rlguard_stop_decisions",
            "Stop decisions the store holds (shadow: recorded, not acted on), by rule",
            labels=["rule", "shadow"],
        )
        uploaded = GaugeMetricFamily(
            "rlguard_uploaded_bytes", "Checkpoint bytes jobs uploaded, by tenant", labels=["tenant"]
        )
        with self.platform.store.transaction() as s:
            by_state = select(Tenant.name, Job.status, func.count(), func.sum(Job.uploaded_bytes))
            totals: dict[str, int] = {}
            for tenant, state, count, sent in s.execute(
                by_state.join(Tenant, Tenant.id == Job.tenant_id).group_by(Tenant.name, Job.status)
            ):
                jobs.add_metric([tenant, state], count)
                totals[tenant] = totals.get(tenant, 0) + int(sent or 0)
            for reason, count in s.execute(
                select(func.coalesce(Run.end_reason, "running"), func.count()).group_by(
                    Run.end_reason
                )
            ):
                runs.add_metric([reason], count)
            for rule, shadow, count in s.execute(
                select(DecisionRecord.rule, DecisionRecord.shadow, func.count())
                .where(DecisionRecord.stop.is_(True))
                .group_by(DecisionRecord.rule, DecisionRecord.shadow)
            ):
                stops.add_metric([rule, str(bool(shadow)).lower()], count)
        for tenant, sent in totals.items():
            uploaded.add_metric([tenant], sent)
        yield from (jobs, runs, stops, uploaded, *self._scheduler())

    def _scheduler(self) -> Iterator[Metric]:
        platform = self.platform
        with platform.lock:
            active = list(platform.active.values())
        held = sum(a.gpus for a in active if a.status in states.ON_GPUS)
        gpus = GaugeMetricFamily(
            "rlguard_gpus", "The cluster's GPUs, held or free", labels=["state"]
        )
        gpus.add_metric(["held"], held)
        gpus.add_metric(["free"], platform.capacity - held)
        yield gpus
        yield GaugeMetricFamily(
            "rlguard_queue_length",
            "Jobs waiting for GPUs",
            value=sum(a.status == states.QUEUED for a in active),
        )
        yield GaugeMetricFamily(
            "rlguard_control_epoch",
            "The control lease's epoch of the leading server (0: a store of one server)",
            value=platform.store.epoch,
        )


def registry(platform: Platform, counts: EvalCounts) -> CollectorRegistry:
    """This server's metrics: the store's state and its own eval counts."""
    found = CollectorRegistry(auto_describe=True)
    found.register(StoreCollector(platform))
    for collector in counts.collectors():
        found.register(collector)
    return found
