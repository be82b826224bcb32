"""The dashboard at scale, in a real browser: a page of 1,000 jobs and a job with 5,000 evals.

A real `rlguard serve` on loopback (SQLite, one virtual GPU): one job reports 5,000 evals (proxy
and KL too) and then holds its GPU, 999 more wait in the queue. Playwright drives Debian's
Chromium (headless) and times, `--repeats` times each (median and all): the jobs page from
navigation to 1,000 rows drawn; a filter's re-render; a new job's row appearing through the
event stream; the job page from navigation to its chart of 5,000 points drawn. Writes JSON;
asserts nothing.

    python benchmarks/bench_dashboard.py --out benchmarks/results/dashboard.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_platform import free_port, start_server

from rlguard.io import write_json
from rlguard.platform.client import Client
from rlguard.platform.ray_head import stop_local_head

RLGUARD = [sys.executable, "-m", "rlguard.cli"]
REPORT_EVALS = """
import math, time
from rlguard.platform.client import JobReporter
reporter = JobReporter.from_env()
for step in range(1, {evals} + 1):
    score = 0.3 + 0.3 * math.sin(step / 900)
    reporter.eval(step, score, step / {evals}, proxy=step / 1000, kl=(step / 2000) ** 1.5)
time.sleep(3600)
"""


def _timed(action, done) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    action()
    done()
    return round((time.perf_counter() - start) * 1000, 1)


def measure(page, url: str, client: Client, evals_job: str, jobs: int) -> dict:  # type: ignore[no-untyped-def]
    count = page.locator("#job-count")

    def all_rows(n: int):  # type: ignore[no-untyped-def]
        return lambda: page.wait_for_function(
            f"document.querySelectorAll('#jobs tbody tr').length === {n}"
        )

    page.goto(f"{url}/#/cluster")
    page.locator("#occupancy").wait_for()
    jobs_page = _timed(lambda: page.goto(f"{url}/#/jobs"), all_rows(jobs))
    assert count.inner_text() == f"{jobs} of {jobs}"
    state = page.locator("#filter-state")
    filter_ms = _timed(lambda: state.select_option("running"), all_rows(1))
    state.select_option("")
    all_rows(jobs)()
    new = {}
    live_row_ms = _timed(
        lambda: new.update(client.submit({"command": "true", "gpus": 1})),
        lambda: page.locator(f'tr[data-job="{new["id"]}"]').wait_for(),
    )
    client.cancel(new["id"])
    job_page = _timed(
        lambda: page.goto(f"{url}/#/jobs/{evals_job}"),
        lambda: page.wait_for_function(
            "document.querySelector('#chart .u-over') && document.querySelector('#log')"
        ),
    )
    return {
        "jobs_page_ms": jobs_page,
        "filter_rerender_ms": filter_ms,
        "new_job_row_ms": live_row_ms,
        "job_page_ms": job_page,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--evals", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    data = Path(tempfile.mkdtemp(prefix="rlguard-bench-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(data, port, None, gpus=1)
    try:
        make = [*RLGUARD, "tenants", "create", "bench", "--quota-gpus", "1", "--json"]
        made = subprocess.run([*make, "--data-dir", str(data)], check=True, capture_output=True)
        key = json.loads(made.stdout)["api_key"]
        client = Client(url, key)
        command = f"{sys.executable} -c '{REPORT_EVALS.format(evals=args.evals)}'"
        evals_job = client.submit({"command": command, "stop_policy": {"rule": "none"}})["id"]
        for _ in range(args.jobs - 1):
            client.submit({"command": "true", "gpus": 1})
        while (client.job(evals_job)["latest_eval"] or {}).get("step") != args.evals:
            time.sleep(1.0)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium",
                headless=True,
                args=["--no-sandbox", "--disable-background-networking"],
            )
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(120_000)
            page.goto(url)
            page.get_by_label("API key").fill(key)
            page.get_by_role("button", name="Sign in").click()
            page.locator("#jobs").wait_for()
            # Each repeat adds (and cancels) one job: the table holds one row more each time.
            runs = [
                measure(page, url, client, evals_job, args.jobs + i) for i in range(args.repeats)
            ]
            browser.close()
        keys = [k for k in runs[0] if k.endswith("_ms")]
        result = {
            "jobs": args.jobs,
            "evals": args.evals,
            "median": {k: statistics.median(r[k] for r in runs) for k in keys},
            "runs": runs,
        }
        write_json(args.out, result)
        print(json.dumps(result, indent=2))
    finally:
        server.terminate()
        server.wait(timeout=120)
        stop_local_head(data)


if __name__ == "__main__":
    main()
