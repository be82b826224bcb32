"""Quotes and budgets in process: the platform on SQLite with a recording executor in Ray's place,
its HTTP API through FastAPI's in-process client (the real app, no server). A job with a `setup`
is quoted at submission by the simulator's own step function; a job whose pace passes its budget
is stopped with reason budget and delivers its best checkpoint; a finished job records what it
measured beside its quote, and its steps export as calibration rows `runtime calibrate` reads."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from in_process import in_process_platform
from sqlalchemy import update

from rlguard.cli.jobs import quote_line
from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore, StoredCheckpoint
from rlguard.platform.db import Run
from rlguard.platform.deposits import Deposits
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.quotes import NO_SETUP, quote_job
from rlguard.platform.reports import Reports
from rlguard.platform.schemas import EvalReport, JobCreate, StepReport
from rlguard.platform.service import Platform
from rlguard.platform.step_reports import StepReports
from rlguard.platform.steps import step_rows, write_csv
from rlguard.platform.tenants import create_tenant
from rlguard.runtime.calib.calibrate import calibrate
from rlguard.runtime.calib.coefficients import load_coefficients
from rlguard.runtime.calib.job import calibrated_job_profile, job_setup
from rlguard.runtime.calib.measured import PHASES, read_measured
from rlguard.runtime.calib.quote import CALIBRATION, STEP_FUNCTION, QuoteSetup, quote, step_phases
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.sim.experiment import measured_batches, run_setup
from rlguard.runtime.sim.serverful import serverful_step

ROOT = Path(__file__).resolve().parents[2]
# Qwen2.5-0.5B GRPO on 2 H100s, GSM8K's lengths (the shipped dataset's 0.5B run, without LoRA).
SETUP = {
    "model": "qwen2.5-0.5b",
    "gpu": "h100",
    "n_gpus": 2,
    "prompts_per_step": 64,
    "samples_per_prompt": 5,
    "prompt_length_mean": 104,
    "max_prompt_length": 512,
    "response_length_mean": 330,
    "max_response_length": 1024,
    "steps": 100,
}


@pytest.fixture
def platform(tmp_path) -> Iterator[Platform]:
    with in_process_platform(tmp_path) as platform:
        yield platform


@pytest.fixture
def api(platform, tmp_path) -> Iterator[TestClient]:
    """The app over the platform, signed in as tenant acme (quota 2 GPUs)."""
    ingest = EvalIngest(Reports(platform))
    ingest.start()
    deposits = Deposits(platform, ArtifactStore(str(tmp_path / "artifacts")))
    _, key = create_tenant(platform.store, "acme", 2)
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(platform, ingest, deposits), headers=headers) as client:
        yield client
    ingest.stop()


def _job_count(api: TestClient) -> int:
    return len(api.get("/v1/jobs").json()["data"])


def test_a_command_job_with_a_setup_is_quoted_at_submission(api, platform):
    answer = api.post("/v1/jobs", json={"command": "true", "setup": SETUP})
    assert answer.status_code == 201, answer.text
    job = answer.json()
    q = job["quote"]
    assert q["status"] == "quoted" and q["function"] == STEP_FUNCTION
    assert job["gpus"] == 2  # the setup's
    assert set(q["step_s"]) == {*PHASES, "total"}
    assert q["step_s"]["total"] == pytest.approx(sum(q["step_s"][p] for p in PHASES), abs=2e-3)
    assert q["total_s"] == pytest.approx(100 * q["step_s"]["total"], abs=0.2)
    assert q["gpu_hours"] == pytest.approx(2 * q["total_s"] / 3600, rel=1e-3)
    lo, hi = q["band"]["gpu_hours"]
    assert lo < q["gpu_hours"] < hi
    # an H100 0.5B eager job on vLLM's V1 engine (the default), as fitted runs measured: nothing
    # of it lies outside the band's domain
    assert q["outside_domain"] == []
    # The quote is the policy's estimate: the user gave none.
    assert job["estimate_s"] == q["total_s"] and job["estimate_source"] == "quote"
    row = platform.table.rows[job["id"]]
    assert platform.table.table.estimate_s[row] == q["total_s"]
    assert api.get(f"/v1/jobs/{job['id']}").json()["quote"] == q


def test_a_quote_names_what_lies_outside_the_calibrations_domain(api):
    setup = {**SETUP, "gpu": "l40s", "engine": {"enforce_eager": False}}
    job = api.post("/v1/jobs", json={"command": "true", "setup": setup}).json()
    notes = job["quote"]["outside_domain"]
    assert [n.split(":")[0] for n in notes] == ["gpu 'l40s'", "engine.enforce_eager false"]
    assert job["quote"]["band"] is not None  # the band stays, with what it was not tested on
    lines = quote_line(job).splitlines()
    assert lines[0].startswith("quote: ")
    assert lines[1:] == [f"  outside the band's domain: {note}" for note in notes]


def test_the_quote_is_the_simulators_step_function(platform):
    """The same function `rlguard runtime simulate` runs for its verl baseline, on the same
    batches: the quote's phases are its mean, and equal the simulator's baseline for seed 0."""
    setup = QuoteSetup.model_validate(SETUP)
    got = quote(setup, setup.steps)
    sim_setup, profile = job_setup(setup, "setup"), calibrated_job_profile(setup, "setup")
    reports = [
        serverful_step(b, sim_setup, profile, Prices()) for b in measured_batches(sim_setup, 0)
    ]
    for phase in PHASES:
        direct = sum(r.phases[phase] for r in reports) / len(reports)
        assert got["step_s"][phase] == round(direct, 3)
    simulated = run_setup(sim_setup, profile, Prices(), seeds=[0])["baseline"]
    for phase in PHASES:
        assert got["step_s"][phase] == round(simulated["phases"][phase], 3)
    assert got["step_s"]["total"] == round(simulated["step_s"], 3)
    assert got["rollout_tp"] == profile.gpus_per_actor


def test_the_band_is_the_calibrations_leave_one_run_out_range():
    """The shipped file's errors are calibration.json's leave-one-run-out errors of every phase a
    quote presents its band for, the held-out runs' included, and a phase's band is quote /
    (1 + largest error) to quote / (1 + smallest)."""
    shipped = yaml.safe_load(CALIBRATION.read_text("utf-8"))["leave_one_run_out"]
    results = json.loads((ROOT / "benchmarks/results/calibration.json").read_text())
    runs = results["leave_one_run_out"]["runs"] + results["held_out"]["runs"]
    # in domain: not a fitted run's generation out of the domain, nor a held-out run's phase
    # its quote would flag (the RTX 4090 run's every phase, the A100 V0 run's generation)
    assert {(r["run"], r["phase"]) for r in runs if not r["in_domain"]} == {
        *((r["run"], "generation") for r in runs if r["generation_out_of_domain"]),
        *(("tinyzero_westwood_qwen2.5_0.5b_ppo_rtx4090", phase) for phase in PHASES),
        ("houkawa2_qwen2.5_1.5b_ppo_1gpu", "generation"),
    }
    for phase in PHASES:
        errors = [r["error"] for r in runs if r["phase"] == phase and r["in_domain"]]
        assert shipped["phases"][phase]["min_error"] == pytest.approx(min(errors), abs=2e-4)
        assert shipped["phases"][phase]["max_error"] == pytest.approx(max(errors), abs=2e-4)
    q = quote(QuoteSetup.model_validate(SETUP), 100)
    for phase in PHASES:
        lo, hi = q["band"]["step_s"][phase]
        e = shipped["phases"][phase]
        assert lo == pytest.approx(q["step_s"][phase] / (1 + e["max_error"]), abs=2e-3)
        assert hi == pytest.approx(q["step_s"][phase] / (1 + e["min_error"]), abs=2e-3)


def test_the_host_range_is_the_step_at_the_calibrations_slowest_and_fastest_hosts():
    """The shipped file's host factors are calibration.json's range over every run, and the
    range is the quote's own step function under the coefficients at those factors: a small
    model on one GPU, mostly per-op work, moves further with its host than a 7B on 16 GPUs."""
    shipped = yaml.safe_load(CALIBRATION.read_text("utf-8"))
    results = json.loads((ROOT / "benchmarks/results/calibration.json").read_text())
    factors = [run["factor"] for run in results["host_factor"]]
    hosts = shipped["host_factor"]
    assert (hosts["runs"], hosts["min"], hosts["max"]) == (len(factors), min(factors), max(factors))
    assert hosts["min"] < 1 < hosts["max"]
    small = QuoteSetup.model_validate({**SETUP, "n_gpus": 1})
    q = quote(small, 100)
    at = load_coefficients()
    for i, factor in enumerate((hosts["min"], hosts["max"])):
        phases, _ = step_phases(small, "setup", at.at_host_speed(factor))
        for phase in PHASES:
            assert q["host_range"]["step_s"][phase][i] == round(phases[phase], 3)
    lo, hi = q["host_range"]["gpu_hours"]
    assert lo < q["gpu_hours"] < hi

    big = QuoteSetup.model_validate({**SETUP, "model": "qwen2.5-7b", "n_gpus": 16})
    spread = [(x["host_range"]["gpu_hours"], x["gpu_hours"]) for x in (q, quote(big, 100))]
    small_spread, big_spread = ((hi - lo) / mid for (lo, hi), mid in spread)
    assert small_spread > big_spread > 0


def test_a_users_estimate_wins_and_jobs_without_a_setup_say_why_they_have_no_quote(api):
    job = api.post("/v1/jobs", json={"command": "true", "setup": SETUP, "estimate_s": 60}).json()
    assert (job["estimate_s"], job["estimate_source"]) == (60, "user")
    plain = api.post("/v1/jobs", json={"command": "true"}).json()
    assert plain["quote"] == {"status": "unquoted", "reason": NO_SETUP["command"]}
    assert (plain["estimate_s"], plain["estimate_source"]) == (3600, "default")
    # A train job runs a local model on whatever devices it gets: no number describes it.
    train = JobCreate.model_validate({"config": {"steps": 40}})
    assert quote_job(train, {"config": {"steps": 40}})["status"] == "unquoted"
    # With a setup, a train job is quoted for its config's steps.
    quoted = JobCreate.model_validate({"config": {"steps": 40}, "setup": {**SETUP, "steps": None}})
    assert quote_job(quoted, {"config": {"steps": 40}})["steps"] == 40


def _running(platform: Platform, body: dict) -> tuple[str, str]:
    with platform.store.transaction() as s:
        from rlguard.platform.db import Tenant

        tenant = s.query(Tenant).filter_by(name="acme").one()
    job_id = platform.submit(tenant, JobCreate.model_validate(body))
    platform.launch(job_id)
    platform.run_started(job_id, pid=1, node_id="node")  # billed from here
    return job_id, platform.executor.env[job_id]["RLGUARD_JOB_TOKEN"]


def _eval(platform, job_id, token, step, score, progress) -> dict:
    stored = StoredCheckpoint(f"output/ckpt-{step}", f"acme/{job_id}/ckpt-{step}")
    report = EvalReport(step=step, score=score, progress=progress)
    return Reports(platform).evals([(job_id, token, report, stored)])[0]


def test_a_job_whose_pace_passes_its_budget_is_stopped_with_its_best_checkpoint(api, platform):
    body = {"command": "true", "setup": SETUP, "budget_gpu_hours": 1.2}
    job_id, token = _running(platform, body)
    assert _eval(platform, job_id, token, 1, 0.6, 0.25)["action"] == "continue"
    assert _eval(platform, job_id, token, 2, 0.5, 0.5)["action"] == "continue"  # 1 decline
    # Its run has been going for half an hour on 2 GPUs, all of it since its first eval (at
    # progress 0.25): 1 GPU-h for half the job, so 1.5 GPU-h at its end, past the budget of 1.2
    # (EvalStop, k = 2, sees a rise and continues). Counted from its start, the pace would say
    # 1.33 at progress 0.75 and 0.0x at progress 0.5, whatever the job's start-up cost.
    with platform.store.transaction() as s:
        s.execute(update(Run).where(Run.job_id == job_id).values(running_at=Run.running_at - 1800))
        started = s.query(Run).filter_by(job_id=job_id).one().running_at
    platform.table.start(job_id, started)
    answer = _eval(platform, job_id, token, 3, 0.55, 0.75)
    assert answer["action"] == "stop" and answer["decision"]["rule"] == "budget"
    platform.run_ended(job_id, 0)  # it obeyed: exited 0 at that eval
    job = api.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "early_stopped" and job["stop_reason"].startswith("budget: projected")
    assert job["best_checkpoint"]["step"] == 1 and job["best_checkpoint"]["is_best"]
    (stop,) = api.get(f"/v1/jobs/{job_id}/decisions?stops_only=true").json()["data"]
    evidence = stop["evidence"]
    assert stop["rule"] == "budget" and stop["params"] == {"budget_gpu_hours": 1.2}
    assert evidence["budget_gpu_hours"] == 1.2 and evidence["progress"] == 0.75
    assert evidence["gpu_hours"] == pytest.approx(1.0, abs=0.01)
    assert evidence["pace_since_progress"] == 0.25 and evidence["pace_since_gpu_hours"] < 0.01
    assert evidence["projected_gpu_hours"] == pytest.approx(1.5, abs=0.02)
    assert evidence["evals"] == 1 and evidence["to_seq"] == stop["event_seq"]
    assert job["measured"]["gpu_hours"] == pytest.approx(1.0, abs=0.01)
    assert job["quote"]["status"] == "quoted"


def test_a_job_that_reports_no_evals_is_stopped_once_it_has_spent_its_budget(api, platform):
    job_id, _ = _running(platform, {"command": "sleep 600", "gpus": 2, "budget_gpu_hours": 0.5})
    with platform.store.transaction() as s:
        started = s.query(Run).filter_by(job_id=job_id).one().running_at
    platform.enforce_budgets(started + 899)  # 2 GPUs for 15 min: 0.4999 GPU-h
    assert api.get(f"/v1/jobs/{job_id}").json()["status"] == "running"
    platform.enforce_budgets(started + 901)
    job = api.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "stopping" and job["stop_reason"].startswith("budget: spent 0.5006")
    (stop,) = api.get(f"/v1/jobs/{job_id}/decisions?stops_only=true").json()["data"]
    assert stop["rule"] == "budget" and stop["params"] == {"budget_gpu_hours": 0.5}
    assert stop["evidence"] == {
        "gpu_hours": pytest.approx(0.5006, abs=1e-4),
        "budget_gpu_hours": 0.5,
    }
    (event,) = [
        e for e in api.get(f"/v1/jobs/{job_id}/events").json()["data"] if e["type"] == "decision"
    ]
    assert event["seq"] == stop["event_seq"] and event["data"]["decision"] == stop["id"]
    platform.enforce_grace(started + 901 + platform.grace_s)  # it did not exit: SIGTERM
    assert platform.executor.stopped == [platform.active_job(job_id).handle]
    platform.run_ended(job_id, 143)
    job = api.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "early_stopped"


def _steps(platform, job_id, token) -> list[dict]:
    timings = [
        {"gen_s": 40.0, "old_log_prob_s": 1.5, "ref_s": 0.6, "update_actor_s": 7.0, "step_s": 50},
        {"gen_s": 30.0, "old_log_prob_s": 1.7, "ref_s": 0.6, "update_actor_s": 6.0, "step_s": 39},
        {"gen_s": 28.0, "old_log_prob_s": 1.5, "ref_s": 0.4, "update_actor_s": 6.4, "step_s": 37},
    ]
    lengths = {"prompt_length_mean": 104.0, "response_length_mean": 320.0}
    reports = StepReports(platform)
    for step, t in enumerate(timings, start=1):
        assert not reports.step(job_id, token, StepReport(step=step, **t, **lengths))
    assert reports.step(job_id, token, StepReport(step=3, **timings[2]))  # re-sent: kept once
    return timings


def test_a_finished_job_records_what_it_measured_beside_its_quote(api, platform, tmp_path):
    job_id, token = _running(platform, {"command": "true", "setup": SETUP})
    timings = _steps(platform, job_id, token)
    _eval(platform, job_id, token, 3, 0.5, 0.03)
    platform.run_ended(job_id, 0)
    job = api.get(f"/v1/jobs/{job_id}").json()
    got = job["measured"]
    assert job["status"] == "succeeded" and got["steps_reported"] == 3
    assert got["progress"] == 0.03 and got["projected_gpu_hours"] > got["gpu_hours"]
    later = timings[1:]  # the first step warms up
    assert got["step_s"] == {
        "generation": 29.0,
        "scoring": pytest.approx((1.7 + 0.6 + 1.5 + 0.4) / 2),
        "training": 6.2,
        "total": 38.0,
    }
    assert set(job["quote"]["step_s"]) == set(got["step_s"])
    # Exported in the calibration dataset's columns, the rows read back and refit the model.
    events = api.get(f"/v1/jobs/{job_id}/events").json()["data"]
    reports = [e["data"] for e in events if e["type"] == "metrics"]
    csv_path = tmp_path / "steps.csv"
    csv_path.write_text(write_csv(step_rows(job_id, job["quote"], job["setup"], reports)))
    header = (ROOT / "src/rlguard/runtime/data/verl_steps.csv").read_text().splitlines()[0]
    assert csv_path.read_text().splitlines()[0] == header
    rows = read_measured(csv_path)
    assert [r.step for r in rows] == [2, 3] and rows[0].gen_s == later[0]["gen_s"]
    setup_file = tmp_path / "job.yaml"
    setup_file.write_text(yaml.safe_dump(SETUP))  # the file `jobs submit --setup` sent
    from rlguard.runtime.calib.job import read_job

    _, fits, _ = calibrate(read_job(setup_file), str(setup_file), [csv_path])
    by_phase = {f.phase: f for f in fits}
    assert by_phase["generation"].measured_s == pytest.approx(29.0)
    assert by_phase["training"].measured_s == pytest.approx(6.2)


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"setup": {**SETUP, "model": "qwen9-1t"}}, "setup.model"),
        ({"setup": {**SETUP, "gpu": "tpu-v5"}}, "setup.gpu"),
        ({"setup": {**SETUP, "profile": "/etc/passwd"}}, "setup.profile"),
        ({"setup": {**SETUP, "steps": None}}, "setup.steps"),
        ({"setup": {**SETUP, "n_gpus": 0}}, "setup.n_gpus"),
        ({"setup": SETUP, "gpus": 1}, "setup.n_gpus"),
        # 72B's weights need 4 H100s per rollout engine at vLLM's 0.5 of memory: 2 cannot hold it
        ({"setup": {**SETUP, "model": "qwen2.5-72b"}}, "setup.n_gpus"),
        # at tensor parallel 1 no KV cache is left for one sequence
        ({"setup": {**SETUP, "model": "qwen2.5-32b", "rollout_tp": 1}}, "setup.rollout_tp"),
        ({"setup": {**SETUP, "prompts_per_step": 8192, "samples_per_prompt": 16}}, "setup"),
        ({"setup": {**SETUP, "dataset_prompts": 10**9}}, "setup.dataset_prompts"),
        ({"setup": {**SETUP, "trainer": {"param_offload": "cpu"}}}, "setup.trainer.param_offload"),
        ({"setup": {**SETUP, "engine": {"vllm_engine": "v2"}}}, "setup.engine.vllm_engine"),
        ({"budget_gpu_hours": 0}, "budget_gpu_hours"),
        ({"budget_gpu_hours": -1.5}, "budget_gpu_hours"),
    ],
)
def test_bad_setups_and_budgets_are_a_4xx_naming_the_field(api, change, param):
    answer = api.post("/v1/jobs", json={"command": "true", **change})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["param"] == param and param.split(".")[-1] in error["message"]
    assert _job_count(api) == 0  # nothing written


def test_a_bad_step_report_is_a_4xx_naming_the_field(api, platform):
    job_id, token = _running(platform, {"command": "true"})
    bad = {"step": 2, "gen_s": -1}
    auth = {"Authorization": f"Bearer {token}"}
    answer = api.post(f"/v1/jobs/{job_id}/steps", json=bad, headers=auth)
    assert answer.status_code == 422 and answer.json()["error"]["param"] == "gen_s"
    good = api.post(f"/v1/jobs/{job_id}/steps", json={"step": 2, "gen_s": 3.0}, headers=auth)
    assert good.status_code == 201 and good.json()["duplicate"] is False


def test_steps_without_lengths_take_the_setups_and_the_job_finishes(api, platform):
    job_id, token = _running(platform, {"command": "true", "setup": SETUP})
    for step, gen_s in [(1, 9.0), (2, 4.0), (3, 6.0)]:
        StepReports(platform).step(job_id, token, StepReport(step=step, gen_s=gen_s))
    platform.run_ended(job_id, 0)
    job = api.get(f"/v1/jobs/{job_id}").json()
    assert job["status"] == "succeeded" and job["measured"]["step_s"] == {"generation": 5.0}


def test_a_setup_the_catalog_no_longer_knows_does_not_keep_a_job_from_finishing(platform):
    from rlguard.platform.db import Job
    from rlguard.platform.outcome import measured

    old = Job(id="job-old", gpus=2, gpu_seconds=7200.0, quote={"status": "quoted"})
    old.spec = {"setup": {**SETUP, "model": "a-model-since-removed"}}
    with platform.store.transaction() as s:
        got = measured(s, old, 0.5)
    assert got["gpu_hours"] == 2.0 and got["step_s"] is None
    assert "a-model-since-removed" in got["step_s_error"]


def test_start_up_is_not_projected_as_pace(api, platform):
    """A job whose start-up took most of its first hour, then paces at 0.2 GPU-h per tenth of its
    progress, projects about 3 GPU-h, within its budget of 3.5: counted from its start it would
    project 13 GPU-h at its first eval and be stopped there."""
    body = {"command": "true", "setup": SETUP, "budget_gpu_hours": 3.5}
    job_id, token = _running(platform, body)

    def at(elapsed_s: float, step: int, progress: float) -> dict:
        with platform.store.transaction() as s:
            started_at = time.time() - elapsed_s
            s.execute(update(Run).where(Run.job_id == job_id).values(running_at=started_at))
            started = s.query(Run).filter_by(job_id=job_id).one().running_at
        platform.table.start(job_id, started)
        return _eval(platform, job_id, token, step, 0.5 + step / 100, progress)

    assert at(2400, 1, 0.1)["action"] == "continue"  # 2 GPUs x 40 min: 1.33 GPU-h at 0.1
    for step in range(2, 6):  # 0.2 GPU-h (2 GPUs x 6 min) per 0.1 of progress
        assert at(2400 + 360 * (step - 1), step, step / 10)["action"] == "continue"
    assert api.get(f"/v1/jobs/{job_id}").json()["status"] == "running"
