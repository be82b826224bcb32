"""The dashboard in a real browser: Playwright driving Debian's Chromium (headless) against a live
`rlguard serve` on loopback. Sign-in, a refused key, the jobs table following a job's states
without a reload, a stopped job's chart markers, evidence and quote, and tenant isolation.

Screenshots go to $RLGUARD_SCREENSHOTS when set (docs/img is made that way), else the test's
temporary directory. CI installs Chromium (.ci/run) and fails rather than skips without it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from live_platform import curve_command

pytestmark = pytest.mark.ray

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HACKING = [0.30, 0.40, 0.50, 0.60, 0.55, 0.50, 0.45, 0.40, 0.35, 0.30]
TIMEOUT_MS = 60_000
SETUP = {  # what the hacking job stands for, for its quote: GRPO on one L40S, CUDA graphs on
    "model": "qwen2.5-0.5b",
    "gpu": "l40s",
    "n_gpus": 1,
    "prompts_per_step": 64,
    "samples_per_prompt": 5,
    "prompt_length_mean": 104,
    "response_length_mean": 330,
    "max_response_length": 1024,
    "steps": 10,
    "engine": {"enforce_eager": False},  # outside the calibration's domain: the page says so
}


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed, and CI must run the dashboard's browser tests")
        pytest.skip("Chromium not found: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("RLGUARD_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _sign_in(page, url: str, key: str) -> None:
    page.goto(url)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()


def test_a_wrong_key_is_refused_with_a_clear_message(live_server, page):
    server = live_server("--gpus", "1")
    _sign_in(page, server.url, "rlg_not-a-key")
    alert = page.locator("#sign-in-error")
    alert.wait_for()
    assert re.search(r"This key was refused: .*key", alert.inner_text(), re.IGNORECASE)
    assert page.locator("#jobs").count() == 0


def test_jobs_table_follows_a_stopped_job_and_its_page_shows_why(live_server, page, tmp_path):
    server = live_server("--gpus", "1", "--k", "3")
    _, key = server.tenant("acme", quota_gpus=1)
    _, rival_key = server.tenant("rival", quota_gpus=1)
    client = server.client(key)
    rival_job = server.client(rival_key).submit({"command": "sleep 1", "gpus": 1})

    _sign_in(page, server.url, key)
    page.locator("#jobs").wait_for()
    command = curve_command(HACKING, 0.4, hacked=True)
    job = client.submit({"command": command, "gpus": 1, "setup": SETUP})
    row = page.locator(f'tr[data-job="{job["id"]}"]')
    row.wait_for()  # appeared through the event stream, with no reload
    seen = set()
    for state in ("running", "early_stopped"):
        page.locator(f'tr[data-job="{job["id"]}"][data-state="{state}"]').wait_for()
        seen.add(state)
    assert seen == {"running", "early_stopped"}
    assert "evalstop" in row.locator("td.reason").inner_text()
    assert page.locator(f'tr[data-job="{rival_job["id"]}"]').count() == 0  # another tenant's
    page.screenshot(path=str(_shots(tmp_path) / "dashboard-jobs.png"))

    row.get_by_role("link").click()
    page.locator(".marker-stop").wait_for()
    best = client.job(job["id"])["best_checkpoint"]["step"]
    assert page.locator(".marker-best").get_attribute("data-step") == str(best)
    stopped_at = int(page.locator(".marker-stop").get_attribute("data-step"))
    assert stopped_at > best
    evidence = page.locator("[data-decision] table.evidence tbody tr")
    assert evidence.count() == 4  # EvalStop k = 3 rests on its last 4 evals
    scores = [float(x) for x in evidence.locator("td:nth-child(3)").all_inner_texts()]
    assert scores == [0.60, 0.55, 0.50, 0.45]
    quoted = page.locator('#quote tr[data-phase="total"] td:nth-child(2)').inner_text()
    assert quoted == f"{job['quote']['step_s']['total']:.1f} s"  # the quote, as submitted
    caveats = page.locator("#quote .caveat").all_inner_texts()
    assert caveats == [f"outside the band's domain: {n}" for n in job["quote"]["outside_domain"]]
    assert len(caveats) == 2  # an L40S, and CUDA graphs
    hosts = page.locator("#host-range").inner_text().split(": ")[-1]
    shown = [float(x.removesuffix(" GPU-h")) for x in hosts.split(" – ")]
    assert shown == pytest.approx(job["quote"]["host_range"]["gpu_hours"], rel=5e-3)
    assert page.locator("#budget").inner_text().startswith("measured ")  # beside it, finished
    best_row = page.locator("#checkpoints tr[data-best]")
    assert best_row.count() == 1
    assert best_row.locator("td.path").inner_text() == f"output/weights-{best}"  # not the server's
    best_row.get_by_role("button", name="files").click()
    with page.expect_download() as download:
        best_row.get_by_role("link", name=re.compile(f"^weights-{best} ")).click()
    assert Path(download.value.path()).read_text() == str(HACKING[best - 1])  # from the store
    page.screenshot(path=str(_shots(tmp_path) / "dashboard-job-stopped.png"), full_page=True)

    page.goto(f"{server.url}/#/jobs/{rival_job['id']}")  # another tenant's job, by its id
    refusal = page.locator("#view [role=alert]")
    refusal.wait_for()
    assert refusal.inner_text() == f"no job {rival_job['id']!r}"  # as if it did not exist

    page.goto(f"{server.url}/#/cluster")
    page.locator("#gpus-in-use").wait_for()
    assert page.locator("#gpu-hours-freed").inner_text() != "0.0000"
    assert page.locator(f'#occupancy rect.mine.early_stop[data-job="{job["id"]}"]').count() == 1
    assert page.locator("#occupancy rect.other").count() == 1  # the rival's run, anonymous
    assert rival_job["id"] not in page.content()
    page.screenshot(path=str(_shots(tmp_path) / "dashboard-cluster.png"), full_page=True)


def test_keyboard_only_on_a_narrow_window_and_an_admin_sees_every_tenant(live_server, browser):
    """Sign in, submit and cancel a job with the keyboard alone on a phone-wide window; the page
    never scrolls sideways (the table does, inside its box). An admin key sees both tenants."""
    server = live_server("--gpus", "1")
    _, key = server.tenant("acme", quota_gpus=1)
    _, admin_key = server.tenant("ops", quota_gpus=0, admin=True)
    busy = server.client(key).submit({"command": "sleep 600", "gpus": 1})  # holds the GPU
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server.url)
    page.locator("#key").wait_for()
    assert page.evaluate("document.activeElement.id") == "key"  # focused on arrival
    page.keyboard.type(key)
    page.keyboard.press("Enter")
    page.locator(f'tr[data-job="{busy["id"]}"][data-state="running"]').wait_for()

    page.locator("#submit-command").focus()
    page.keyboard.type("sleep 600")
    page.keyboard.press("Enter")  # submits the form: queued behind the busy job
    queued = page.locator('tr[data-state="queued"]')
    queued.wait_for()
    job_id = queued.get_attribute("data-job")
    cancel = page.get_by_role("button", name=f"Cancel {job_id}")
    for _ in range(60):  # Tab through the page until the cancel button has the focus
        page.keyboard.press("Tab")
        if cancel.evaluate("button => button === document.activeElement"):
            break
    else:
        pytest.fail("the cancel button is not reachable with Tab")
    page.keyboard.press("Enter")
    page.locator(f'tr[data-job="{job_id}"][data-state="cancelled"]').wait_for()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    context.close()

    admin = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    admin.set_default_timeout(TIMEOUT_MS)
    _sign_in(admin, server.url, admin_key)
    admin.locator(f'tr[data-job="{busy["id"]}"]').wait_for()
    assert "(admin)" in admin.locator("#who").inner_text()
    assert admin.locator("#filter-tenant").is_visible()
    admin.goto(f"{server.url}/#/cluster")
    admin.locator("#usage").wait_for()
    rows = admin.locator("#usage tbody tr")
    assert [r.get_attribute("data-tenant") for r in rows.all()] == ["acme", "ops"]
    assert admin.locator('#usage tr[data-tenant="acme"] td').nth(1).inner_text() == "1 of 1"
    admin.context.close()
