"""GET /metrics: the platform's state and its eval ingestion in Prometheus's text format, for
admin keys only, over a real HTTP server (the platform in process: SQLite, a recording executor);
then a real Prometheus (Debian's `prometheus`), configured as docs/metrics.md says, scrapes it and
its PromQL answers what the API says."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from doc_blocks import DOCS, blocks
from in_process import http_server, in_process_platform
from prometheus_client.parser import text_string_to_metric_families

from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.deposits import Deposits
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.loop import schedule
from rlguard.platform.reports import Reports
from rlguard.platform.tenants import create_tenant
from rlguard.ports import unused_port

SCORES = [0.5, 0.6, 0.55, 0.5]  # EvalStop k=2 stops at the second decline


@pytest.fixture
def served(tmp_path) -> Iterator[dict]:
    """The app on loopback with two tenants' keys and an admin key; acme has two jobs on the
    GPUs and one queued (2 GPUs), and one of them reported SCORES until EvalStop stopped it."""
    with in_process_platform(tmp_path) as platform:
        ingest = EvalIngest(Reports(platform))
        ingest.start()
        deposits = Deposits(platform, ArtifactStore(str(tmp_path / "artifacts")))
        keys = {name: create_tenant(platform.store, name, 2)[1] for name in ("acme", "other")}
        keys["admin"] = create_tenant(platform.store, "ops", 0, admin=True)[1]
        try:
            with http_server(create_app(platform, ingest, deposits)) as url:
                acme = httpx.Client(base_url=url, headers=_bearer(keys["acme"]))
                jobs = [acme.post("/v1/jobs", json={"command": "true"}).json()["id"] for _ in "abc"]
                with platform.lock:
                    schedule(platform, time.time(), round_due=True)
                token = platform.executor.env[jobs[0]]["RLGUARD_JOB_TOKEN"]
                for step, score in enumerate(SCORES):
                    report = {"step": step, "score": score, "progress": step / 10}
                    sent = httpx.post(
                        f"{url}/v1/jobs/{jobs[0]}/evals", json=report, headers=_bearer(token)
                    )
                    assert sent.status_code == 200, sent.text
                yield {"url": url, "keys": keys, "jobs": jobs, "acme": acme}
                acme.close()
        finally:
            ingest.stop()


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_are_for_admin_keys_only(served):
    url, keys = served["url"], served["keys"]
    assert httpx.get(f"{url}/metrics").status_code == 401
    refused = httpx.get(f"{url}/metrics", headers=_bearer(keys["acme"]))
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    got = httpx.get(f"{url}/metrics", headers=_bearer(keys["admin"]))
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")


def test_metrics_say_what_the_api_says(served):
    url, keys, acme = served["url"], served["keys"], served["acme"]
    samples = _samples(httpx.get(f"{url}/metrics", headers=_bearer(keys["admin"])).text)
    listed = acme.get("/v1/jobs").json()["data"]
    by_state: dict[str, int] = {}
    for job in listed:
        by_state[job["status"]] = by_state.get(job["status"], 0) + 1
    assert sum(by_state.values()) == 3 and by_state["queued"] == 1 and by_state["stopping"] == 1
    for state, count in by_state.items():
        assert samples["rlguard_jobs", (("state", state), ("tenant", "acme"))] == count
    cluster = acme.get("/v1/cluster").json()
    assert samples["rlguard_gpus", (("state", "held"),)] == cluster["gpus_in_use"] == 2
    assert samples["rlguard_gpus", (("state", "free"),)] == cluster["gpus_free"] == 0
    assert samples["rlguard_queue_length", ()] == cluster["queued"] == 1
    assert samples["rlguard_control_epoch", ()] == 0  # SQLite: one server, no lease
    assert samples["rlguard_eval_reports_total", (("outcome", "stored"),)] == len(SCORES)
    assert samples["rlguard_eval_report_seconds_count", ()] == len(SCORES)
    stop = (("rule", "evalstop"), ("shadow", "false"), ("verdict", "stop"))
    assert samples["rlguard_decisions_total", stop] == 1
    assert samples["rlguard_stop_decisions", (("rule", "evalstop"), ("shadow", "false"))] == 1


def test_a_real_prometheus_scrapes_the_server(served, tmp_path):
    binary = shutil.which("prometheus")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the Prometheus scrape: no `prometheus` binary")
        pytest.skip("no `prometheus` binary (Debian's `prometheus` package)")
    port = unused_port()
    config = tmp_path / "prometheus.yml"
    (written,) = [block.text for block in blocks("metrics.md") if block.lang == "yaml"]
    target = served["url"].removeprefix("http://")
    config.write_text(  # docs/metrics.md's scrape config, for this server, scraped each second
        written.replace("127.0.0.1:8321", target)
        .replace("rlg_ADMIN_KEY", served["keys"]["admin"])
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
    )
    command = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        queued = _promql(port, 'rlguard_jobs{tenant="acme",state="queued"}', process, tmp_path)
        assert queued == 1
        stored = _promql(port, 'rlguard_eval_reports_total{outcome="stored"}', process, tmp_path)
        assert stored == len(SCORES)
        assert _promql(port, 'up{job="rlguard"}', process, tmp_path) == 1
        for expr in _dashboard_queries():  # each panel's query is PromQL Prometheus accepts
            answer = httpx.get(f"http://127.0.0.1:{port}/api/v1/query", params={"query": expr})
            assert answer.json()["status"] == "success", (expr, answer.text)
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _dashboard_queries() -> list[str]:
    dashboard = json.loads((DOCS / "grafana" / "rlguard-platform.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def _promql(port: int, query: str, process: subprocess.Popen, logs: Path) -> float:
    """The query's one value, once Prometheus has scraped it (waits up to 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, (logs / "prometheus.log").read_text()[-2000:]
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/api/v1/query", params={"query": query})
            result = answer.json()["data"]["result"]
        except (httpx.HTTPError, ValueError, KeyError):
            result = []
        if result:
            return float(result[0]["value"][1])
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never answered {query}")
