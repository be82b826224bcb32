"""The platform as a cloud control plane under load: how many light jobs run at once and what
caps it, how fast queued jobs launch, and what the API, the evals and the scheduler take
meanwhile.

A real multi-node Ray cluster on this host (tests/platform/ray_cluster.py: a head and `--nodes`
worker nodes of `--gpus-per-node` virtual GPUs), `rlguard serve` on PostgreSQL (sandboxed where
the host can, as the tests run it), `--tenants` tenants and `--jobs` jobs submitted at once over
them. A job is a light command job (tests/platform/light_job.py: an eval every 1-2 `--pause-s`,
`--evals` of them, one job in 10 hacking and stopped by EvalStop); one in `--watched-every` is a
watched job instead (tests/platform/watched_job.py, a watcher reading its JSONL). For
`--minutes`, every 5 s: jobs by state, the server's CPU and memory, and every process a run costs
by kind (its Ray actor, Ray's idle workers, the sandbox, the watcher, the job), memory as PSS so
shared pages count once; meanwhile a tenant's client times GET /v1/jobs and GET /v1/jobs/{id}.
Afterwards: launches per second (the runs' `running_at` in the store), the eval reports' latency
and the scheduling passes' from the server's /metrics. Writes JSON; asserts nothing.

    python benchmarks/bench_platform_load.py --postgres postgresql://postgres@127.0.0.1:5432 \\
        --out benchmarks/results/platform_load.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform as host
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import psutil
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))
from live_platform import LiveServer, new_database, sql_engine
from ray_cluster import RayCluster
from test_watched_jobs import WATCH
from test_watched_jobs import command as watched_command

from rlguard.io import write_json
from rlguard.platform.store import Store
from rlguard.platform.tenants import create_tenant
from rlguard.platform.volume import unmount
from rlguard.ports import unused_port

FRESH = httpx.Limits(keepalive_expiry=2)
"""Drop a connection idle for 2 s: uvicorn closes one idle for 5 s, and a POST sent on it as it
closes is reset (httpx does not resend a POST)."""
LIGHT_JOB = Path(__file__).resolve().parents[1] / "tests" / "platform" / "light_job.py"
KINDS = ("actor", "idle_worker", "sandbox", "watcher", "job")


def kind_of(process: psutil.Process) -> str | None:
    """Which part of a run a process is (None: not one of a run's)."""
    name, cmdline = process.name(), " ".join(process.cmdline())
    if "JobProcess" in name or "JobProcess" in cmdline[:80]:
        return "actor"
    if name.startswith("ray::IDLE") or cmdline.startswith("ray::IDLE"):
        return "idle_worker"
    if name == "bwrap":
        return "sandbox"
    if "watch_runner" in cmdline:
        return "watcher"
    if "light_job.py" in cmdline or "watched_job.py" in cmdline:
        return "job"
    return None


def processes_by_kind(pss: bool) -> dict[str, dict[str, float]]:
    """Count and memory (MB; PSS if `pss`, else RSS) of every process of a run, by kind."""
    found: dict[str, list[float]] = defaultdict(list)
    for process in psutil.process_iter():
        try:
            kind = kind_of(process)
            if kind is not None:
                memory = process.memory_full_info().pss if pss else process.memory_info().rss
                found[kind].append(memory / 2**20)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return {k: {"count": len(v), "mb": round(sum(v), 1)} for k, v in found.items()}


def metrics(url: str, key: str) -> dict:
    """The server's /metrics, as {name: [(labels, value)]}."""
    scraped = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    found: dict[str, list] = defaultdict(list)
    for family in text_string_to_metric_families(scraped.text):
        for sample in family.samples:
            found[sample.name].append((sample.labels, sample.value))
    return found


def jobs_by_state(scraped: dict) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for labels, value in scraped["rlguard_jobs"]:
        counts[labels["state"]] += int(value)
    return dict(counts)


def quantile(scraped: dict, name: str, q: float) -> float | None:
    """The q-quantile of a histogram, interpolated in its bucket as Prometheus's
    histogram_quantile does (seconds)."""
    buckets = sorted((float(labels["le"]), value) for labels, value in scraped[f"{name}_bucket"])
    total = buckets[-1][1]
    if total == 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = upper, count
    return lower


def histogram(scraped: dict, name: str, seconds: float | None = None) -> dict | None:
    """Count, mean and p50/p99 of one of the server's histograms (None: the server was gone);
    `seconds`: the count per second over that long too."""
    if not scraped:
        return None
    count = scraped[f"{name}_count"][0][1]
    found = {
        "count": count,
        "mean_ms": round(1000 * scraped[f"{name}_sum"][0][1] / max(count, 1), 1),
        "p50_ms": round(1000 * (quantile(scraped, name, 0.5) or 0), 1),
        "p99_ms": round(1000 * (quantile(scraped, name, 0.99) or 0), 1),
    }
    return found | ({"per_s": round(count / seconds, 1)} if seconds else {})


def server_exit(log: Path, code: int) -> dict:
    """Why the server exited on its own: its exit code and its last line that is not Ray's."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if "raylet" not in line]
    return {"code": code, "last_line": next((x for x in reversed(lines) if "rlguard" in x), "")}


def percentiles(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    ms = np.array(values) * 1000
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
    }


class Sampler(threading.Thread):
    """Every 5 s: jobs by state, the server's CPU and memory, a run's processes by kind."""

    def __init__(self, url: str, admin: str, server_pid: int) -> None:
        super().__init__(daemon=True)
        self.url, self.admin = url, admin
        self.server = psutil.Process(server_pid)
        self.samples: list[dict] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        self.server.cpu_percent()
        start = time.time()
        while not self.stopped.wait(5):
            try:
                states = jobs_by_state(metrics(self.url, self.admin))
            except httpx.HTTPError as e:  # the server is gone, or too slow to answer
                self.samples.append({"t_s": round(time.time() - start, 1), "error": repr(e)})
                continue
            self.samples.append(
                {
                    "t_s": round(time.time() - start, 1),
                    "jobs": states,
                    "server_cpu_percent": self.server.cpu_percent(),
                    "server_rss_mb": round(self.server.memory_info().rss / 2**20, 1),
                    "load_average": os.getloadavg()[0],
                    "memory_used_mb": round(psutil.virtual_memory().used / 2**20),
                    "memory": "pss" if (pss := len(self.samples) % 6 == 5) else "rss",
                    "processes": processes_by_kind(pss),
                }
            )


class ApiProbe(threading.Thread):
    """A tenant watching its jobs while the platform is loaded: the API's latency as it sees it."""

    def __init__(self, url: str, key: str, job_id: str) -> None:
        super().__init__(daemon=True)
        self.http = httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60, limits=FRESH
        )
        self.job_id = job_id
        self.list_s: list[float] = []
        self.get_s: list[float] = []
        self.failed = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(1):
            for path, into in (
                ("/v1/jobs?limit=20", self.list_s),
                (f"/v1/jobs/{self.job_id}", self.get_s),
            ):
                start = time.perf_counter()
                try:
                    self.http.get(path).raise_for_status()
                except httpx.HTTPError:
                    self.failed += 1
                    continue
                into.append(time.perf_counter() - start)


def job_body(i: int, evals: int, pause_s: float, watched_every: int) -> dict:
    if watched_every and i % watched_every == watched_every - 1:
        scores = [0.3 + 0.01 * s for s in range(evals)]
        command = watched_command(scores, pause_s * 1.5, 10**6)
        return {"command": command, "watch": WATCH, "cpus": 0.25}
    peak = evals // 3 if i % 10 == 9 else evals + 1  # one in 10 hacks
    return {"command": f"{sys.executable} {LIGHT_JOB} {evals} {pause_s} {peak}", "cpus": 0.25}


def launches(db: str, since: float) -> dict:
    """Jobs started per second, and each run's wait from its launch to its process, from the
    runs' `started_at` and `running_at` in the store."""
    query = text("select started_at, running_at from runs where running_at is not null")
    with sql_engine(db).connect() as connection:
        runs = sorted(connection.execute(query).all(), key=lambda r: r.running_at)
    if len(runs) < 2:
        return {"runs_started": len(runs)}
    starts = [r.running_at for r in runs]
    windows = np.histogram(starts, bins=np.arange(starts[0], starts[-1] + 30, 30))[0]
    waits = np.array([r.running_at - r.started_at for r in runs])
    return {
        "runs_started": len(runs),
        "first_start_s": round(starts[0] - since, 1),
        "mean_per_s": round(len(runs) / (starts[-1] - starts[0]), 2),
        "best_30s_per_s": round(float(windows.max()) / 30, 2),
        "launch_to_running_s": {
            f"p{q}": round(float(np.percentile(waits, q)), 1) for q in (50, 90, 99)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--postgres", required=True, help="postgresql://user@host:port")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--gpus-per-node", type=int, default=150)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--evals", type=int, default=60)
    parser.add_argument("--pause-s", type=float, default=1.0)
    parser.add_argument("--watched-every", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=8)
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="rlguard-load-"))
    # The nodes' processes niced: on a cloud, the control plane's host is not its GPU nodes'.
    # Here all share 2 cores, and 16 Ray workers starting at once starved the server's lease
    # renewal past its 4.5 s (it exited: "no longer leads").
    cluster = RayCluster(nice=10).start()
    for n in range(args.nodes):
        cpus = args.gpus_per_node  # virtual: a run asks for a quarter of one
        cluster.add_worker(f"w{n}", gpus=args.gpus_per_node, cpus=cpus)
    db = new_database(args.postgres)
    server = LiveServer(data, unused_port(), db, ["--address", cluster.address])
    os.environ.update(cluster.env)  # the server joins the cluster with its token
    server.start()
    try:
        store = Store(db)
        gpus = args.nodes * args.gpus_per_node
        quota = 2 * math.ceil(gpus / args.tenants)
        keys = [create_tenant(store, f"t{i}", quota)[1] for i in range(args.tenants)]
        admin = create_tenant(store, "ops", 0, admin=True)[1]
        store.close()

        clients = [
            httpx.Client(
                base_url=server.url,
                headers={"Authorization": f"Bearer {k}"},
                timeout=120,
                limits=FRESH,
            )
            for k in keys
        ]
        while clients[0].get("/v1/cluster").json()["gpus"] < gpus:  # the workers joined
            time.sleep(1)
        submit_s: list[float] = []
        began = time.time()
        deadline = began + args.minutes * 60

        def submit(i: int) -> str | None:
            """Job i, submitted by its tenant; none once the run's time is up (at this host's
            load, 10,000 submissions can outlast it)."""
            if time.time() > deadline or server.process.poll() is not None:
                return None
            start = time.perf_counter()
            body = job_body(i, args.evals, args.pause_s, args.watched_every)
            response = clients[i % args.tenants].post("/v1/jobs", json=body)
            submit_s.append(time.perf_counter() - start)
            if response.is_error:
                raise RuntimeError(f"POST /v1/jobs {body}: {response.text}")
            return response.json()["id"]

        assert server.process is not None
        sampler = Sampler(server.url, admin, server.process.pid)
        sampler.start()
        probe = ApiProbe(server.url, keys[0], submit(0))
        probe.start()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(submit, range(1, args.jobs)))
        submitted_s = time.time() - began
        while time.time() < deadline and server.process.poll() is None:
            time.sleep(1)
        sampler.stopped.set()
        probe.stopped.set()
        sampler.join()
        probe.join()
        exited = server.process.poll()
        scraped = metrics(server.url, admin) if exited is None else {}
        peak = max(
            (s for s in sampler.samples if "jobs" in s), key=lambda s: s["jobs"].get("running", 0)
        )
        priced = [s for s in sampler.samples if s["memory"] == "pss"]
        result = {
            "machine": {
                "cpus": os.cpu_count(),
                "memory_gb": round(psutil.virtual_memory().total / 2**30),
                "python": host.python_version(),
            },
            "settings": vars(args) | {"out": str(args.out), "gpus": gpus, "quota_gpus": quota},
            "submitted": {
                "jobs": len(submit_s),
                "seconds": round(submitted_s, 1),
                **percentiles(submit_s),
            },
            "running_peak": peak["jobs"].get("running", 0),
            "at_peak": peak,
            "launches": launches(db, began),
            "server_exit": None if exited is None else server_exit(server.log, exited),
            "api": {
                "list_jobs": percentiles(probe.list_s),
                "get_job": percentiles(probe.get_s),
                "failed": probe.failed,
            },
            "evals": histogram(scraped, "rlguard_eval_report_seconds", args.minutes * 60),
            "scheduling_pass": histogram(scraped, "rlguard_scheduling_pass_seconds"),
            "per_run_pss_mb": per_run(priced),
            "samples": sampler.samples,
        }
    finally:
        server.kill()
        cluster.stop()
        unmount(data)
    write_json(args.out, result)
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=2))


def per_run(samples: list[dict]) -> dict[str, float]:
    """A run's memory by kind at the PSS sample with the most actors: what a node holds per run."""
    if not samples:
        return {}
    best = max(samples, key=lambda s: s["processes"].get("actor", {}).get("count", 0))
    runs = max(best["processes"].get("actor", {}).get("count", 0), 1)
    return {k: round(v["mb"] / runs, 1) for k, v in best["processes"].items()} | {"runs": runs}


if __name__ == "__main__":
    main()
