"""`rlguard runtime simulate --setup FILE.yaml` and `rlguard runtime calibrate`: a user's job,
their verl logs, and one-line errors for bad files and fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli_runner import cli, one_line_exit_2
from rlguard.runtime.calib.calibrate import SCALED, fit_scales, rows_from_logs
from rlguard.runtime.calib.coefficients import load_coefficients
from rlguard.runtime.calib.job import job_profile, job_setup, read_job
from rlguard.runtime.calib.replay import compute_rate, exposed_comm_s, replay, simulate
from rlguard.runtime.sim.hardware import GB, model_spec
from rlguard.runtime.sim.phases import scoring_s, training_s
from rlguard.runtime.sim.workload import PromptPool

JOB = {
    "model": "qwen2.5-0.5b",
    "gpu": "a100",
    "n_gpus": 2,
    "prompts_per_step": 32,
    "samples_per_prompt": 4,
    "dataset_prompts": 256,
    "prompt_length_mean": 100,
    "max_prompt_length": 512,
    "response_length_mean": 220,
    "response_clip_ratio": 0.01,
    "max_response_length": 1024,
    "engine": {"enforce_eager": True, "gpu_memory_utilization": 0.6},
}
# how much slower than the shipped model the logs below are, per phase
SLOWER = {"generation": 1.3, "scoring": 0.8, "training": 1.1}


def job_file(tmp_path: Path, **change) -> Path:
    fields = {k: v for k, v in {**JOB, **change}.items() if v is not None}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(fields))
    return path


def test_a_job_file_simulates_with_the_calibrated_profile(monkeypatch, capsys, tmp_path) -> None:
    path = job_file(tmp_path)
    args = ("runtime", "simulate", "--setup", str(path), "--seeds", "1", "--json")
    code, out, _ = cli(monkeypatch, capsys, *args)
    assert code == 0, out
    payload = json.loads(out)
    assert {"config", "baseline", "serverless", "speedup", "cost_cut", "ablation"} <= set(payload)
    config = payload["config"]
    assert config["name"] == "job" and config["n_gpus"] == 2 and config["k"] == 4
    assert config["profile"]["name"] == "calibrated-qwen2.5-0.5b-a100-tp1"
    shipped = job_profile(read_job(path), str(path), load_coefficients())
    assert config["profile"]["phase_switch_s"] == pytest.approx(shipped.phase_switch_s)


def test_a_ppo_job_whose_critic_keeps_padding_computes_its_passes_at_full_width(tmp_path) -> None:
    """verl's critic leaves use_remove_padding off: its value pass and update run every sample
    at max prompt + max response (1,536 tokens here); the policy's and reference's do not."""
    phases = {}
    for padded in (False, True):
        path = job_file(tmp_path, algorithm="ppo", critic_remove_padding=not padded)
        job = read_job(path)
        setup = job_setup(job, str(path))
        profile = job_profile(job, str(path), load_coefficients())
        batch = PromptPool(setup.workload, 0).batch(0, 0, setup.prompts_per_step, setup.k)
        phases[padded] = (scoring_s(batch, profile, setup), training_s(batch, profile, setup))
    extra = (32 * 4 * (512 + 1024) - batch.sequence_tokens()) / 2  # each GPU's padding tokens
    assert extra > 3 * batch.sequence_tokens() / 2
    (score_padded, train_padded), (score, train) = phases[True], phases[False]
    assert score_padded - score == pytest.approx(extra * profile.score_s_per_token)
    assert train_padded - train == pytest.approx(extra * profile.train_s_per_token)


def test_only_a_job_with_offloaded_parameters_pays_the_offload_costs(tmp_path) -> None:
    """verl's `param_offload` brings every layer back to the GPU for each pass and update: the
    fitted fixed costs are charged per pass and update to such a job, and to no other."""
    c, model = load_coefficients(), model_spec("qwen2.5-0.5b", "model")
    phases = {}
    for offload in (False, True):
        path = job_file(tmp_path, algorithm="ppo", trainer={"param_offload": offload})
        job = read_job(path)
        setup = job_setup(job, str(path))
        profile = job_profile(job, str(path), c)
        batch = PromptPool(setup.workload, 0).batch(0, 0, setup.prompts_per_step, setup.k)
        phases[offload] = (scoring_s(batch, profile, setup), training_s(batch, profile, setup))
    per_pass = c.offload_pass_s_per_layer * model.layers + c.offload_pass_s_per_gb * (
        model.weight_bytes / GB
    )
    (score_off, train_off), (score, train) = phases[True], phases[False]
    assert per_pass > 0 and c.offload_update_s_per_layer > 0
    assert score_off - score == pytest.approx(setup.scoring_passes() * per_pass)
    assert train_off - train == pytest.approx(
        setup.training_passes() * c.offload_update_s_per_layer * model.layers
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"model": "gpt-5"}, "unknown 'gpt-5'"),
        ({"critic_remove_padding": "sometimes"}, "field 'critic_remove_padding'"),
        ({"gpu": "tpu"}, "field 'gpu'"),
        ({"n_gpus": 0}, "field 'n_gpus'"),
        ({"samples_per_prompt": None}, "field 'samples_per_prompt'"),
        ({"response_length_mean": 5000}, "field 'response_length_mean'"),
        ({"engine": {"gpu_memory_utilization": 1.5}}, "engine.gpu_memory_utilization"),
        ({"batch": 3}, "field 'batch'"),
        ({"trainer": {"strategy": "megatron", "tp": 4}}, "tp x pp = 4 does not divide 2 GPUs"),
        ({"trainer": {"micro_batch_per_gpu": 0}}, "trainer.micro_batch_per_gpu"),
        ({"trainer": {"param_offload": "cpu"}}, "trainer.param_offload"),
    ],
)
def test_bad_job_fields_are_one_line_exit_2(monkeypatch, capsys, tmp_path, change, needle):
    path = job_file(tmp_path, **change)
    args = ("runtime", "simulate", "--setup", str(path), "--seeds", "1")
    one_line_exit_2(*cli(monkeypatch, capsys, *args), str(path), needle)


def test_an_unknown_setup_names_the_choices(monkeypatch, capsys) -> None:
    args = ("runtime", "simulate", "--setup", "no-such.yaml")
    one_line_exit_2(*cli(monkeypatch, capsys, *args), "paper-testbed", "job YAML file")


def verl_log(tmp_path: Path, job: Path, name: str = "run.log", steps: int = 5) -> Path:
    """Console lines of a run whose phases' coefficients are `SLOWER` than the shipped ones
    (step 1: a warm-up)."""
    lines = ["step:1 - timing_s/gen:999 - response_length/mean:1 - prompt_length/mean:1"]
    shipped = load_coefficients()
    slower = shipped.model_copy(
        update={n: getattr(shipped, n) * SLOWER[p] for p, names in SCALED.items() for n in names}
    )
    path = tmp_path / name  # a row's lengths are drawn with a seed of its log's path and step
    for step in range(2, steps + 2):
        mean = 200 + 10 * step
        metrics = {"response_length/mean": mean, "prompt_length/mean": 100.0}
        metrics |= {"response_length/max": 1024.0, "response_length/clip_ratio": 0.01}
        path.write_text("\n".join(lines) + "\n" + _line(step, metrics | _fill()))
        row = rows_from_logs(read_job(job), str(job), [path])[-1]
        phases = simulate(replay(row), slower)
        metrics["timing_s/gen"] = phases["generation"]
        half = phases["scoring"] / 2
        metrics |= {"timing_s/old_log_prob": half, "timing_s/ref": half}
        metrics["timing_s/update_actor"] = phases["training"]
        lines.append(_line(step, metrics))
    path.write_text("(TaskRunner pid=1) " + "\n(TaskRunner pid=1) ".join(lines) + "\n")
    return path


def _fill() -> dict[str, float]:
    return {"timing_s/gen": 1.0, "timing_s/old_log_prob": 1.0, "timing_s/ref": 1.0}


def _line(step: int, metrics: dict[str, float]) -> str:
    return f"step:{step} - " + " - ".join(f"{k}:np.float64({v})" for k, v in metrics.items())


def test_calibrate_scales_each_phase_to_the_logs(monkeypatch, capsys, tmp_path) -> None:
    job = job_file(tmp_path)
    log = verl_log(tmp_path, job)
    out = tmp_path / "mine.yaml"
    args = ("runtime", "calibrate", str(log), "--setup", str(job), "--out", str(out), "--json")
    code, stdout, _ = cli(monkeypatch, capsys, *args)
    assert code == 0, stdout
    phases = {p["phase"]: p for p in json.loads(stdout)["phases"]}
    for phase, slower in SLOWER.items():
        assert phases[phase]["steps"] == 5  # step 1 left out
        assert phases[phase]["scale"] == pytest.approx(slower, rel=1e-3)
        assert phases[phase]["shipped_model_error"] == pytest.approx(1 / slower - 1, rel=1e-3)
    # the logs' host factor is reported beside the scales (calib/fit.py tests its value)
    host = json.loads(stdout)["host_factor"]
    assert 0.2 < host < 5  # inside the search's bounds (e^-3 to e^3), not pinned to one
    code, text, _ = cli(monkeypatch, capsys, *args[:-1])
    assert code == 0 and f"host factor {host:.3g}: one scale on every per-op term" in text
    # the profile reproduces the logs when the job is simulated with it
    args = ("runtime", "simulate", "--setup", str(job), "--profile", str(out), "--seeds", "1")
    code, stdout, _ = cli(monkeypatch, capsys, *args, "--json")
    assert code == 0, stdout
    assert json.loads(stdout)["config"]["profile"]["name"].startswith("calibrated-qwen2.5-0.5b")


def test_the_rows_calibrate_fits_carry_the_job_files_trainer_padding_and_engine(tmp_path) -> None:
    """Each setting the step model reads reaches the rows the shipped model is scaled on."""
    trainer = {
        "micro_batch_per_gpu": 8,
        "log_prob_micro_batch_per_gpu": 16,
        "gradient_checkpointing": True,
        "param_offload": True,
    }
    padding = {"remove_padding": False, "critic_remove_padding": False}
    engine = {"enforce_eager": True, "vllm_engine": "v1"}  # the CSV's own default is v0
    job = job_file(tmp_path, algorithm="ppo", trainer=trainer, engine=engine, **padding)
    (row, *_) = rows_from_logs(read_job(job), str(job), [verl_log(tmp_path, job)])
    assert row.trainer() == read_job(job).trainer
    assert {k: getattr(row, k) for k in padding} == padding
    assert (row.enforce_eager, row.vllm_engine) == (True, "v1")


def test_calibrate_leaves_the_communication_at_datasheet_speed(tmp_path) -> None:
    # Megatron TP4 on 8 L20: its all-reduces over PCIe are in every step but in no scale
    megatron = {"strategy": "megatron", "tp": 4, "micro_batch_per_gpu": 4}
    job = job_file(tmp_path, gpu="l20", n_gpus=8, trainer=megatron)
    log = verl_log(tmp_path, job)
    rows = rows_from_logs(read_job(job), str(job), [log])
    assert rows[0].layout().tp == 4
    _, fits = fit_scales(rows, load_coefficients())
    for fit in fits:
        assert fit.scale == pytest.approx(SLOWER[fit.phase], rel=1e-3), fit.phase


def test_calibrate_recovers_the_scale_where_fsdp_hides_traffic_behind_the_compute(tmp_path):
    # FSDP over PCIe with one-sequence micro-batches: exposed gathers shrink as compute slows
    job = job_file(tmp_path, gpu="l20", n_gpus=8, trainer={"micro_batch_per_gpu": 1})
    rows = rows_from_logs(read_job(job), str(job), [verl_log(tmp_path, job)])
    shipped = load_coefficients()
    assert exposed_comm_s(replay(rows[0]), "training", *compute_rate(shipped, "training")) > 0
    _, fits = fit_scales(rows, shipped)
    for fit in fits:
        assert fit.scale == pytest.approx(SLOWER[fit.phase], rel=1e-3), fit.phase


@pytest.mark.parametrize(
    ("log_text", "needle"),
    [
        ("no metrics here\n", "no verl step metrics found"),
        ("step:1 - timing_s/gen:3\nstep:2 - timing_s/gen:3\n", "step 2 has no 'response_length"),
        ("step:1 - timing_s/gen:3 - response_length/mean:5 - prompt_length/mean:3\n", "no step"),
        (
            "step:1 - response_length/mean:5 - prompt_length/mean:3\n"
            "step:2 - response_length/mean:5 - prompt_length/mean:3\n",
            "no step times a phase",
        ),
    ],
)
def test_bad_logs_are_one_line_exit_2(monkeypatch, capsys, tmp_path, log_text, needle) -> None:
    job = job_file(tmp_path)
    log = tmp_path / "bad.log"
    log.write_text(log_text)
    args = ("runtime", "calibrate", str(log), "--setup", str(job), "--out", str(tmp_path / "p"))
    one_line_exit_2(*cli(monkeypatch, capsys, *args), needle)
    assert not (tmp_path / "p").exists()
