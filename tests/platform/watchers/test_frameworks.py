"""The framework presets on the files each framework writes.

verl: files written by verl's own `Tracking` logger (tensorboard and file backends, verl 0.9.1
from PyPI, which imports on CPU), by verl_run.py; committed in data/verl/ (attempt1: steps 0-15,
attempt2: resumed from global_step_10 to 20). `test_verl_live` runs verl_run.py itself when
RLGUARD_VERL_PYTHONPATH points at a verl install.
NeMo-RL: it does not install on CPU here (the PyPI `nemo-rl` is a 0.0.0 placeholder, and its
nemo_rl/utils/logger.py imports ray, wandb, mlflow, swanlab and prometheus_client at the top), so
its test writes the format its source writes: torch's SummaryWriter under
logs/exp_NNN/tensorboard with "{prefix}/{name}" tags at step total_steps + 1, checkpoints saved
as tmp_step_N and renamed step_N. OpenRLHF likewise (it needs deepspeed and vLLM).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

DATA = Path(__file__).parent / "data"
VERL_JSONL = "demo/gsm8k.jsonl"


def copy_attempt(attempt: str, job: Path, jsonl: bool = True) -> None:
    """An attempt's files into the job dir, as the attempt wrote them (its JSONL rewritten in
    place from the start, as verl's FileLogger does with open("wb"))."""
    source = DATA / "verl" / attempt
    for path in sorted(source.rglob("*")):
        target = job / path.relative_to(source)
        if path.is_dir() or (path.name.endswith(".jsonl") and not jsonl):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.name.endswith(".jsonl") and target.exists():
            with open(target, "r+b") as f:  # same inode, truncated and rewritten
                f.truncate(0)
                f.write(path.read_bytes())
        else:
            shutil.copy2(path, target)


@pytest.mark.parametrize("source", ["tensorboard", "jsonl"])
def test_verl_files_from_verls_own_logger_through_a_restart(tmp_path, watch, source):
    fields = {"preset": "verl", "source": source, "total_steps": 20}
    if source == "jsonl":
        fields["path"] = VERL_JSONL
    watcher, seen = watch(**fields)
    copy_attempt("attempt1", tmp_path)
    watcher.poll()
    assert seen.steps == [0, 5, 10, 15] and seen.scores == [0.3, 0.45, 0.6, 0.55]
    assert seen.evals[2] == pytest.approx(
        {"step": 10, "score": 0.6, "progress": 0.5, "proxy": 0.7, "kl": 0.01, "loss": -0.1}
    )
    assert seen.checkpoints == [
        (10, "checkpoints/demo/gsm8k/global_step_10", pytest.approx({"eval": 0.6}))
    ]  # approx: TensorBoard keeps float32
    copy_attempt("attempt2", tmp_path)  # resumed from global_step_10: re-validates 10, 15
    watcher.poll()
    assert seen.steps == [0, 5, 10, 15, 20] and seen.scores[-1] == 0.52
    codes = seen.codes()
    expected = ["step_backwards"] if source == "tensorboard" else ["file_replaced"]
    assert codes[0] == expected[0] and "step_backwards" in codes
    last = (20, "checkpoints/demo/gsm8k/global_step_20", pytest.approx({"eval": 0.52}))
    assert seen.checkpoints[-1] == last
    delivery = watcher.delivered()
    assert (delivery.step, delivery.rule) == (10, "at_best_eval")
    assert delivery.path == "checkpoints/demo/gsm8k/global_step_10"


def test_verl_tags_are_recognised_by_pattern(tmp_path, watch):
    watcher, _ = watch(preset="verl", total_steps=20)
    copy_attempt("attempt1", tmp_path)
    watcher.poll()
    assert watcher.matcher.bound == {"eval": "val-core/openai/gsm8k/reward/mean@1"}


@pytest.mark.skipif(
    not os.environ.get("RLGUARD_VERL_PYTHONPATH"), reason="RLGUARD_VERL_PYTHONPATH unset"
)
def test_verl_live(tmp_path, watch):
    """verl's Tracking writes while the watcher polls (the JSONL logger is unbuffered; the
    TensorBoard adapter's SummaryWriter flushes every 120 s or 10 events, so read it last)."""
    env = os.environ | {"PYTHONPATH": os.environ["RLGUARD_VERL_PYTHONPATH"]}
    script = str(Path(__file__).parent / "verl_run.py")
    jsonl, _ = watch(preset="verl", source="jsonl", path=VERL_JSONL, total_steps=20)
    tb, tb_seen = watch(preset="verl", total_steps=20)
    run = subprocess.Popen([sys.executable, script, str(tmp_path), "0", "15"], env=env)
    while run.poll() is None:
        jsonl.poll()
        time.sleep(0.05)
    assert run.returncode == 0
    subprocess.run([sys.executable, script, str(tmp_path), "10", "20"], env=env, check=True)
    jsonl.poll()
    tb.poll()
    for watcher in (jsonl, tb):
        assert sorted(watcher.reported) == [0, 5, 10, 15, 20]
        assert watcher.delivered().path == "checkpoints/demo/gsm8k/global_step_10"
    assert "step_backwards" in tb_seen.codes()


def nemo_rl_attempt(job: Path, exp: str, start: int, end: int, curve: dict[int, float]) -> None:
    """Log as NeMo-RL's GRPO does with tensorboard_enabled (format only, see the module doc)."""
    writer = SummaryWriter(log_dir=str(job / "logs" / exp / "tensorboard"))
    for total_steps in range(start, end):
        step = total_steps + 1
        if step in curve:  # validate() -> log_metrics(val_metrics, step, prefix="validation")
            for name, value in {"accuracy": curve[step], "avg_length": 200.0}.items():
                writer.add_scalar(f"validation/{name}", value, step)
        if step % 10 == 0:  # CheckpointManager: tmp_step_N, renamed once complete
            tmp = job / "results" / "grpo" / f"tmp_step_{step}"
            (tmp / "policy").mkdir(parents=True)
            (tmp / "training_info.json").write_text("{}")
            tmp.rename(tmp.with_name(f"step_{step}"))
        train = {"reward": 0.1 * step, "loss": 1.0 / step, "kl_penalty": 0.002 * step}
        for name, value in train.items():
            writer.add_scalar(f"train/{name}", value, step)
    writer.close()


def test_nemo_rl_format_with_a_restart_in_a_new_exp_directory(tmp_path, watch):
    watcher, seen = watch(preset="nemo-rl", total_steps=40)
    nemo_rl_attempt(tmp_path, "exp_001", 0, 25, {10: 0.4, 20: 0.7})
    (tmp_path / "results" / "grpo" / "tmp_step_30").mkdir()  # a save cut short: never counted
    watcher.poll()
    assert seen.steps == [10, 20] and seen.scores == [0.4, 0.7]
    assert seen.evals[1] == pytest.approx(
        {"step": 20, "score": 0.7, "progress": 0.5, "proxy": 2.0, "kl": 0.04, "loss": 0.05}
    )
    time.sleep(1.1)  # a relaunch (resumed from step_20) logs to logs/exp_002
    nemo_rl_attempt(tmp_path, "exp_002", 20, 40, {30: 0.6, 40: 0.5})
    watcher.poll()
    assert seen.steps == [10, 20, 30, 40]
    assert [c[:2] for c in seen.checkpoints] == [
        (10, "results/grpo/step_10"),
        (20, "results/grpo/step_20"),
        (30, "results/grpo/step_30"),
        (40, "results/grpo/step_40"),
    ]
    delivery = watcher.delivered()
    assert (delivery.step, delivery.rule) == (20, "at_best_eval")


def test_openrlhf_format(tmp_path, watch):
    """OpenRLHF's TensorboardLogger: train/{k} and eval/{k}, eval keys eval_{ds}_pass1; the
    checkpoint (DeepSpeed tag global_step{N}) is saved before the eval of the same step."""
    watcher, seen = watch(preset="openrlhf", total_steps=30)
    writer = SummaryWriter(log_dir=str(tmp_path / "tensorboard" / "run"))
    for step in range(1, 31):
        for key, value in {"reward": 0.1 * step, "kl": 0.01 * step, "policy_loss": 0.5}.items():
            writer.add_scalar(f"train/{key}", value, step)
        if step % 15 == 0:
            (tmp_path / "ckpt/checkpoints_ppo_ray/_actor" / f"global_step{step}").mkdir(
                parents=True
            )
        if step % 10 == 0:
            for key, value in {"eval_math_pass1": step / 100, "eval_math_pass4": 0.9}.items():
                writer.add_scalar(f"eval/{key}", value, step)
    writer.close()
    watcher.poll()
    assert seen.steps == [10, 20, 30] and seen.scores == [0.1, 0.2, 0.3]
    delivery = watcher.delivered()
    assert (delivery.best_step, delivery.step, delivery.rule) == (30, 30, "at_best_eval")
    assert [c[0] for c in seen.checkpoints] == [15, 30]
