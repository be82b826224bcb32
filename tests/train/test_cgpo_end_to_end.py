"""SFT -> CGPO on the toy world, on CPU: the judges' pass rate rises; interrupted runs resume
exactly; the run's artefacts (eval events, best model, metrics, TensorBoard) are written."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from rlguard.train.toy_runs import sft_toy, toy_config
from rlguard.train.trainer import CGPOTrainer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    return root, sft_toy(root, seed=1)


def events(run_dir):
    return [json.loads(line) for line in (run_dir / "eval_events.jsonl").read_text().splitlines()]


def test_two_task_cgpo_raises_the_judges_pass_rate(toy):
    root, policy = toy
    config = toy_config(root, policy, "cgpo", tensorboard=True)
    summary = CGPOTrainer(config, progress=False).train()
    history = events(root / "cgpo")
    assert [e["step"] for e in history] == [0, 10, 20, 30, 40]
    start, end = history[0]["score"], history[-1]["score"]
    # 128 sampled eval answers per point: the binomial sd of a rate is <= 0.045
    assert end >= start + 0.1, history
    assert summary["best_score"] == max(e["score"] for e in history)
    best = AutoModelForCausalLM.from_pretrained(root / "cgpo" / "best")
    assert best.config.vocab_size > 0
    rows = [json.loads(line) for line in (root / "cgpo" / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "math/constraint_satisfaction" in r]
    assert [r["step"] for r in trained] == list(range(1, 41))
    for key in ("reward", "calibrated_reward", "seq_kl", "length", "judge/math"):
        assert f"math/{key}" in trained[0]
    assert "style/judge/instructions" in trained[0]
    assert list((root / "cgpo" / "tensorboard").glob("events.out.tfevents.*"))


def test_an_interrupted_run_resumes_to_the_same_weights(toy, monkeypatch):
    root, policy = toy
    settings = {"steps": 6, "save_every": 3, "eval_every": 3, "eval_prompts": 8}
    CGPOTrainer(toy_config(root, policy, "straight", **settings), progress=False).train()

    crash_at = {"step": 5}
    original = CGPOTrainer.training_step

    def crashing(self, step):
        if step == crash_at["step"]:
            raise KeyboardInterrupt
        return original(self, step)

    monkeypatch.setattr(CGPOTrainer, "training_step", crashing)
    config = toy_config(root, policy, "resumed", **settings)
    with pytest.raises(KeyboardInterrupt):
        CGPOTrainer(config, progress=False).train()
    monkeypatch.setattr(CGPOTrainer, "training_step", original)
    # The same run moved to a machine that has only its checkpoint (as the platform restores it
    # from its store onto another node): its eval history comes from the checkpoint.
    moved = toy_config(root, policy, "moved", **settings)
    step_3 = "checkpoints/step-000003"
    shutil.copytree(root / "resumed" / step_3, root / "moved" / step_3)
    saved = []
    trainer = CGPOTrainer(moved, progress=False, save_hooks=[lambda s, p: saved.append((s, p))])
    assert trainer.train()["resumed_from"] == 3
    assert saved == [(6, root / "moved" / "checkpoints" / "step-000006")]

    summary = CGPOTrainer(config, progress=False).train()
    assert summary["resumed_from"] == 3

    straight = load_file(root / "straight" / "checkpoints" / "step-000006" / "policy.safetensors")
    for run in ("resumed", "moved"):
        resumed = load_file(root / run / "checkpoints" / "step-000006" / "policy.safetensors")
        for name, tensor in straight.items():
            torch.testing.assert_close(resumed[name], tensor, rtol=0, atol=0)
    rows = [
        json.loads(line) for line in (root / "resumed" / "metrics.jsonl").read_text().splitlines()
    ]
    train_steps = [r["step"] for r in rows if "grad_norm" in r]
    assert train_steps == [1, 2, 3, 4, 5, 6]  # step 4 ran twice, is recorded once
    assert [e["step"] for e in events(root / "resumed")] == [0, 3, 6]

    def scores(run):
        return [(e["step"], e["score"], e["proxy"], e["loss"]) for e in events(root / run)]

    assert scores("resumed") == scores("moved") == scores("straight")


def test_a_run_that_died_before_its_first_checkpoint_starts_over_once(toy, monkeypatch):
    """Its step-0 eval is run again: the earlier attempt's records go, not doubled."""
    root, policy = toy
    config = toy_config(root, policy, "restarted", steps=3, save_every=3, eval_every=3)
    original = CGPOTrainer.training_step

    def crashing(self, step):
        if step == 2:
            raise KeyboardInterrupt
        return original(self, step)

    monkeypatch.setattr(CGPOTrainer, "training_step", crashing)
    with pytest.raises(KeyboardInterrupt):
        CGPOTrainer(config, progress=False).train()
    assert [e["step"] for e in events(root / "restarted")] == [0]
    monkeypatch.setattr(CGPOTrainer, "training_step", original)
    assert CGPOTrainer(config, progress=False).train()["resumed_from"] == 0
    assert [e["step"] for e in events(root / "restarted")] == [0, 3]
    rows = (root / "restarted" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(r)["step"] for r in rows] == [0, 1, 2, 3, 3]  # evals at 0 and 3


def test_an_eval_hook_stops_the_run_and_keeps_its_checkpoint(toy):
    root, policy = toy
    config = toy_config(root, policy, "stopped", steps=9, eval_every=3, save_every=100)
    seen = []

    def stop_at_step_3(event):
        seen.append(event["step"])
        return "3 consecutive eval declines" if event["step"] == 3 else None

    summary = CGPOTrainer(config, eval_hooks=[stop_at_step_3], progress=False).train()
    assert seen == [0, 3]
    assert summary["stopped"] == "3 consecutive eval declines" and summary["steps"] == 3
    assert (root / "stopped" / "checkpoints" / "step-000003" / "policy.safetensors").is_file()
    again = CGPOTrainer(config, eval_hooks=[stop_at_step_3], progress=False).train()
    assert again["steps"] == 3 and again["stopped"] == summary["stopped"]  # it stays stopped
    assert seen == [0, 3, 0, 3]  # the resumed rule was given the run's eval history
