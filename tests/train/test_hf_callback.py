"""EvalStopCallback on a real HF Trainer (and TRL's SFTTrainer): stops, keeps and restores the best.

The eval metric is scripted (through `compute_metrics`, or injected by a callback for TRL), so
the stop step follows by hand from the rule's semantics. EvalStop (registry defaults k=3,
min_delta=0.01, warmup=2) on 0.2, 0.4, 0.6, 0.5, 0.4, 0.3: evals 1-2 are warm-up, eval 3 (0.6)
is no decline, evals 4, 5, 6 decline -> stop at eval 6. With eval_steps=2 that is step 12, and
the best (0.6) is step 6.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import (
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)

from rlguard.cluster.stopping.evalstop import EvalStop
from rlguard.cluster.stopping.patience import Patience
from rlguard.train.callbacks import EvalStopCallback
from tiny_models import CORPUS, tiny_causal_lm, tiny_tokenizer

HUMP = [0.2, 0.4, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1, 0.1]


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


class Texts(torch.utils.data.Dataset):
    def __init__(self, tokenizer, n: int) -> None:
        enc = tokenizer(
            CORPUS[:n], padding="max_length", max_length=24, truncation=True, return_tensors="pt"
        )
        self.ids, self.mask = enc["input_ids"], enc["attention_mask"]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        labels = self.ids[i].masked_fill(self.mask[i] == 0, -100)
        return {"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": labels}


class Script:
    """compute_metrics that returns the next scripted value, whatever the predictions."""

    def __init__(self, name: str, values: list[float]) -> None:
        self.name, self.values = name, iter(values)

    def __call__(self, _predictions) -> dict[str, float]:
        return {self.name: next(self.values)}


class Inject(TrainerCallback):
    """Puts the next scripted value into the eval metrics before EvalStopCallback reads them."""

    def __init__(self, name: str, values: list[float]) -> None:
        self.name, self.values = name, iter(values)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        metrics[self.name] = next(self.values)


class Snapshot(TrainerCallback):
    """Weights at train end as training left them (runs before EvalStopCallback restores)."""

    def on_train_end(self, args, state, control, model=None, **kwargs):
        self.weights = {k: v.detach().clone() for k, v in model.state_dict().items()}


def args(tmp_path, **overrides) -> TrainingArguments:
    base = {
        "output_dir": str(tmp_path),
        "max_steps": 20,
        "per_device_train_batch_size": 2,
        "per_device_eval_batch_size": 2,
        "learning_rate": 1e-2,
        "eval_strategy": "steps",
        "eval_steps": 2,
        "save_strategy": "steps",
        "save_steps": 5,
        "save_total_limit": 1,
        "logging_steps": 1,
        "report_to": [],
        "use_cpu": True,
        "disable_tqdm": True,
        "seed": 0,
    }
    return TrainingArguments(**(base | overrides))


def train(tokenizer, tmp_path, callback, script, model=None, **overrides):
    snapshot = Snapshot()
    trainer = Trainer(
        model=model if model is not None else tiny_causal_lm(tokenizer),
        args=args(tmp_path, **overrides),
        train_dataset=Texts(tokenizer, 8),
        eval_dataset=Texts(tokenizer, 2),
        compute_metrics=script,
        callbacks=[snapshot, callback],
    )
    trainer.train()
    return trainer, snapshot


def checkpoints(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("checkpoint-*"))


def test_stops_at_third_decline_and_restores_best_checkpoint(tokenizer, tmp_path):
    events = tmp_path / "events" / "evals.jsonl"
    cb = EvalStopCallback("eval_score", job_id="job-1", events_path=events)
    trainer, snapshot = train(tokenizer, tmp_path, cb, Script("score", HUMP))

    assert trainer.state.global_step == 12
    assert cb.stopped and cb.reason == "3 consecutive eval declines"
    assert (cb.best_step, cb.best_score) == (6, 0.6)
    summary = json.loads((tmp_path / "evalstop.json").read_text())
    assert summary["stopped"] and summary["best_step"] == 6 and summary["best_score"] == 0.6
    assert summary["best_checkpoint"] == str(tmp_path / "checkpoint-6")
    assert [e["step"] for e in summary["events"]] == [2, 4, 6, 8, 10, 12]
    # save_total_limit=1 rotated away the step-5 and step-10 saves, never the best one.
    assert checkpoints(tmp_path) == ["checkpoint-6"]

    best = load_file(tmp_path / "checkpoint-6" / "model.safetensors")
    final = trainer.model.state_dict()
    assert all(torch.equal(final[k], v) for k, v in best.items())
    assert any(not torch.equal(snapshot.weights[k], v) for k, v in best.items())

    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [line["score"] for line in lines] == HUMP[:6]
    assert [line["stop"] for line in lines] == [False] * 5 + [True]
    assert lines[0]["job_id"] == "job-1" and lines[0]["kind"] == "rlhf"
    assert lines[-1]["progress"] == pytest.approx(12 / 20)
    logged = [h["loss"] for h in trainer.state.log_history if "loss" in h and h["step"] == 12]
    assert lines[-1]["loss"] == pytest.approx(logged[0])


def test_rising_scores_never_stop_and_save_strategy_no_still_keeps_best(tokenizer, tmp_path):
    rising = [0.1 * i for i in range(1, 11)]
    cb = EvalStopCallback("score")
    trainer, _ = train(
        tokenizer, tmp_path, cb, Script("score", rising), save_strategy="no", logging_steps=50
    )

    assert trainer.state.global_step == 20
    assert not cb.stopped and cb.reason == ""
    assert cb.best_step == 20 and cb.best_score == pytest.approx(1.0)
    assert checkpoints(tmp_path) == ["checkpoint-20"]
    assert all(e["loss"] is None for e in cb.events)  # nothing logged before step 50


def test_lower_is_better_metric(tokenizer, tmp_path):
    # Negated for the rule: -0.9, -0.7, -0.5 rise, then three declines -> stop at eval 6.
    losses = [0.9, 0.7, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    cb = EvalStopCallback("my_loss", rule=EvalStop(k=3), greater_is_better=False)
    trainer, _ = train(tokenizer, tmp_path, cb, Script("my_loss", losses), eval_steps=1)

    assert trainer.state.global_step == 6 and cb.stopped
    assert (cb.best_step, cb.best_score) == (3, 0.5)
    assert [e["score"] for e in cb.events] == [-v for v in losses[:6]]
    best = load_file(tmp_path / "checkpoint-3" / "model.safetensors")
    assert all(torch.equal(trainer.model.state_dict()[k], v) for k, v in best.items())


def test_restores_peft_adapter(tokenizer, tmp_path):
    peft = pytest.importorskip("peft")
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    model = peft.get_peft_model(tiny_causal_lm(tokenizer), config)
    cb = EvalStopCallback("score")
    train(tokenizer, tmp_path, cb, Script("score", HUMP), model=model)

    assert cb.stopped and cb.best_step == 6
    best = load_file(tmp_path / "checkpoint-6" / "adapter_model.safetensors")
    final = peft.get_peft_model_state_dict(model)
    assert best.keys() == final.keys()
    assert all(torch.equal(final[k], v) for k, v in best.items())


def checkpointing_on(config_class: type) -> dict[str, bool]:
    """TRL's default, activation checkpointing on, under the name transformers gives it: 5.x renamed
    `gradient_checkpointing` (which TRL's configs set) to `activation_checkpointing`."""
    names = {f.name for f in dataclasses.fields(config_class)}
    new = "activation_checkpointing" in names
    return {"activation_checkpointing" if new else "gradient_checkpointing": True}


def test_stops_trl_sft_trainer(tokenizer, tmp_path):
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    cb = EvalStopCallback("score")
    config = trl.SFTConfig(
        output_dir=str(tmp_path),
        max_steps=20,
        max_length=24,
        per_device_train_batch_size=2,
        per_device_eval_batch_size=2,
        learning_rate=1e-2,
        eval_strategy="steps",
        eval_steps=2,
        save_strategy="no",
        save_total_limit=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        disable_tqdm=True,
        **checkpointing_on(trl.SFTConfig),
    )
    trainer = trl.SFTTrainer(
        model=tiny_causal_lm(tokenizer),
        args=config,
        train_dataset=datasets.Dataset.from_dict({"text": CORPUS[:8]}),
        eval_dataset=datasets.Dataset.from_dict({"text": CORPUS[:2]}),
        processing_class=tokenizer,
        callbacks=[Inject("eval_score", HUMP), cb],
    )
    trainer.train()

    assert trainer.state.global_step == 12 and cb.stopped and cb.best_step == 6
    assert checkpoints(tmp_path) == ["checkpoint-6"]


def evaluate(cb: EvalStopCallback, values: list[float], max_steps: int = 100) -> list[int]:
    """Feed `values` straight to on_evaluate; the steps at which training was told to stop."""
    targs = TrainingArguments(output_dir="unused", report_to=[], use_cpu=True)
    stops = []
    for step, value in enumerate(values, start=1):
        control = TrainerControl()
        state = TrainerState(global_step=step, max_steps=max_steps)
        cb.on_evaluate(targs, state, control, metrics={"eval_score": value, "eval_loss": 1.0})
        if control.should_training_stop:
            stops.append(step)
    return stops


def test_rule_by_name_from_registry():
    # Patience (patience=5): best 0.6 at eval 3, then five non-improvements -> stop at eval 8.
    cb = EvalStopCallback("score", rule="patience")
    assert isinstance(cb.rule, Patience)
    assert evaluate(cb, [0.2, 0.4, 0.6, 0.5, 0.6, 0.55, 0.3, 0.2]) == [8]
    assert cb.reason == "no improvement in 5 evals" and cb.best_step == 3


def test_missing_metric_names_it_and_the_keys_present():
    cb = EvalStopCallback("accuracy")
    with pytest.raises(ValueError, match=r"'accuracy'.*\['eval_loss', 'eval_score'\]"):
        evaluate(cb, [0.5])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rule": "no-such-rule"}, "unknown stop rule"),
        ({"rule": "none"}, "never stops"),
        ({"kind": "sft"}, "not 'sft'"),
    ],
)
def test_misconfiguration_is_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EvalStopCallback("score", **kwargs)


def test_conflicting_metric_for_best_model_is_rejected(tmp_path):
    targs = TrainingArguments(
        output_dir=str(tmp_path), report_to=[], use_cpu=True, metric_for_best_model="loss"
    )
    with pytest.raises(ValueError, match="conflicts"):
        EvalStopCallback("score").on_train_begin(targs, TrainerState(), TrainerControl())
    EvalStopCallback("loss", greater_is_better=False).on_train_begin(
        targs, TrainerState(), TrainerControl()
    )
