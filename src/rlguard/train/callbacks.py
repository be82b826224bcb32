"""EvalStop for Hugging Face `Trainer` and TRL trainers: the cluster stop rules as a callback.

Why: an existing HF/TRL job gets the same early stopping the scheduler applies to cluster jobs,
decided by the same `StopRule` objects, and ends with the weights of its best eval rather than
those of the eval where the rule fired (by then the score has already declined for k evals).

Each evaluation becomes an `EvalEvent` (score negated when lower is better, so rules always see
"higher is better"; progress = global_step / max_steps; loss = the last logged training loss, NaN
before the first log). A stop sets `control.should_training_stop`. A new best score sets
`control.should_save`, which `Trainer._maybe_log_save_evaluate` honours whatever `save_strategy`
is ("no" included); `on_save` then points `state.best_model_checkpoint` at that checkpoint, which
transformers' `rotate_checkpoints`/`sort_checkpoints` always protect from `save_total_limit`
(and which `save_total_limit=1` keeps alone at train end). Checkpoints are assumed to be on a
filesystem every process can read; DeepSpeed/FSDP sharded weights are not restored here (use
`load_best_model_at_end` with a matching `metric_for_best_model` there).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

from safetensors.torch import load_model
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, load_sharded_checkpoint
from transformers.utils import ADAPTER_SAFE_WEIGHTS_NAME, SAFE_WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME

from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import RULES, RuleParams
from rlguard.cluster.stopping.base import StopRule
from rlguard.io import write_json

SUMMARY_NAME = "evalstop.json"


class EvalStopCallback(TrainerCallback):
    """Stop an HF/TRL run with a cluster stop rule and keep (and restore) its best checkpoint.

    `metric` names an eval metric, with or without the "eval_" prefix. `rule` is a `StopRule` or a
    name from `rlguard.cluster.registry.RULES` (built with its default `RuleParams`). `kind` must be
    one the rule watches. `events_path`, if given, gets one JSON line per eval (the event as the
    rule saw it, plus its decision). `best_score` is in the metric's own units.
    """

    def __init__(
        self,
        metric: str,
        rule: StopRule | str = "evalstop",
        greater_is_better: bool = True,
        job_id: str | None = None,
        kind: str = "rlhf",
        events_path: str | Path | None = None,
        restore_best: bool = True,
    ) -> None:
        self.rule = _resolve_rule(rule)
        if kind not in self.rule.job_kinds:
            raise ValueError(
                f"rule {self.rule.name!r} watches job kinds {sorted(self.rule.job_kinds)}, "
                f"not {kind!r}: it would never stop this run"
            )
        self.metric, self.greater_is_better = metric, greater_is_better
        self.job_id, self.kind, self.restore_best = job_id, kind, restore_best
        self.events_path = None if events_path is None else Path(events_path)
        self.stopped = False
        self.reason = ""
        self.best_step: int | None = None
        self.best_score: float | None = None
        self.best_checkpoint: str | None = None
        self.events: list[dict[str, Any]] = []
        self._last_step: int | None = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        # The Trainer rewrites best_model_checkpoint (and, for save_strategy="best", should_save)
        # from its own metric; a different metric would let rotation delete our best checkpoint.
        theirs = args.metric_for_best_model
        if theirs is not None and (
            _eval_key(theirs) != _eval_key(self.metric)
            or bool(args.greater_is_better) != self.greater_is_better
        ):
            raise ValueError(
                f"metric_for_best_model={theirs!r} (greater_is_better={args.greater_is_better}) "
                f"conflicts with EvalStopCallback metric {self.metric!r} "
                f"(greater_is_better={self.greater_is_better}); unset it or make them match"
            )

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        step = state.global_step
        if step == self._last_step:
            return  # e.g. trainer.evaluate() after train(): not a new point on the curve
        self._last_step = step
        value = self._metric_value(metrics or {})
        sign = 1.0 if self.greater_is_better else -1.0
        event = EvalEvent(
            job_id=self.job_id or args.run_name or args.output_dir,
            kind=self.kind,
            step=step,
            progress=step / state.max_steps if state.max_steps else 0.0,
            score=sign * value,
            loss=_last_train_loss(state.log_history),
        )
        decision = self.rule.observe(event)
        record = dataclasses.asdict(event) | {"stop": decision.stop, "reason": decision.reason}
        if math.isnan(event.loss):
            record["loss"] = None  # strict JSON has no NaN
        self.events.append(record)
        if self.events_path is not None and state.is_world_process_zero:
            self.events_path.parent.mkdir(parents=True, exist_ok=True)
            with self.events_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
                f.flush()
        if not math.isnan(value) and (
            self.best_score is None or sign * value > sign * self.best_score
        ):
            self.best_step, self.best_score = step, value
            control.should_save = True
        if decision.stop:
            self.stopped, self.reason = True, decision.reason or "stopped"
            control.should_training_stop = True

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if state.global_step == self.best_step:
            self.best_checkpoint = os.path.join(
                args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            )
            state.best_model_checkpoint = self.best_checkpoint

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if state.is_world_process_zero:
            write_json(Path(args.output_dir) / SUMMARY_NAME, self.summary())
        if not self.restore_best or self.best_step in (None, state.global_step):
            return  # no eval, or the weights in memory already are the best ones
        if self.best_checkpoint is None:
            raise RuntimeError(
                f"no checkpoint was saved at best step {self.best_step}; cannot restore it"
            )
        load_checkpoint_weights(kwargs["model"], self.best_checkpoint)

    def summary(self) -> dict[str, Any]:
        return {
            "stopped": self.stopped,
            "reason": self.reason,
            "best_step": self.best_step,
            "best_score": self.best_score,
            "best_checkpoint": self.best_checkpoint,
            "events": self.events,
        }

    def _metric_value(self, metrics: dict[str, float]) -> float:
        for key in (self.metric, _eval_key(self.metric)):
            if key in metrics:
                return float(metrics[key])
        raise ValueError(
            f"eval metric {self.metric!r} (or {_eval_key(self.metric)!r}) not in the evaluation "
            f"metrics; present: {sorted(metrics)}"
        )


def load_checkpoint_weights(model: Any, checkpoint: str) -> None:
    """Load a Trainer checkpoint's weights into `model` in place, as `Trainer._load_best_model`.

    A PEFT model gets its active adapter reloaded; a full model its (possibly sharded) safetensors.
    """
    if os.path.isfile(os.path.join(checkpoint, ADAPTER_SAFE_WEIGHTS_NAME)):
        model.load_adapter(checkpoint, adapter_name=model.active_adapters[0])
        return
    weights = os.path.join(checkpoint, SAFE_WEIGHTS_NAME)
    if os.path.isfile(weights):
        _, unexpected = load_model(model, weights, strict=False)
    elif os.path.isfile(os.path.join(checkpoint, SAFE_WEIGHTS_INDEX_NAME)):
        unexpected = load_sharded_checkpoint(model, checkpoint, strict=False).unexpected_keys
    else:
        raise FileNotFoundError(f"{checkpoint}: no {SAFE_WEIGHTS_NAME} or adapter weights")
    if unexpected:
        raise RuntimeError(f"{checkpoint} does not match the model: unexpected keys {unexpected}")


def _resolve_rule(rule: StopRule | str) -> StopRule:
    if isinstance(rule, StopRule):
        return rule
    if rule not in RULES:
        raise ValueError(f"unknown stop rule {rule!r}; known: {sorted(RULES)}")
    built = RULES[rule](RuleParams())
    if built is None:
        raise ValueError(f"stop rule {rule!r} never stops; drop the callback instead")
    return built


def _eval_key(metric: str) -> str:
    return metric if metric.startswith("eval_") else f"eval_{metric}"


def _last_train_loss(log_history: list[dict[str, Any]]) -> float:
    for entry in reversed(log_history):
        if "loss" in entry:
            return float(entry["loss"])
    return math.nan
