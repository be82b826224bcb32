"""OpenAI's fine-tuning objects from the rlguard job under each: the job (status mapped),
its events (states, evals as `metrics`, stop decisions with their evidence) and its
checkpoints (the model directories the job delivered: CGPO's `best/`, SFT and DPO's `final/`),
and the names of fine-tuned models, `ft:BASE:TENANT:SUFFIX:ID` (`:ckpt-step-N` for a
checkpoint)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlguard.platform import states
from rlguard.platform.db import Checkpoint, Event, FineTuningJob, Job

STATUS = {
    states.VALIDATING: "validating_files",
    states.QUEUED: "queued",
    states.STARTING: "running",
    states.RUNNING: "running",
    states.STOPPING: "running",
    states.SUCCEEDED: "succeeded",
    states.EARLY_STOPPED: "succeeded",  # stopped at its best: a model, as OpenAI's succeeded
    states.FAILED: "failed",
    states.CANCELLED: "cancelled",
}
MODEL_DIRS = ("output/best", "output/final")  # what a stage leaves as an HF model directory
OWNER = "rlguard"


def status(job: Job) -> str:
    return STATUS.get(job.status, job.status)  # `paused` is OpenAI's own name too


def model_name(ft: FineTuningJob, tenant_name: str) -> str:
    return f"ft:{ft.model}:{tenant_name}:{ft.suffix or ''}:{ft.id.removeprefix('ftjob-')}"


def job_checkpoints(s: Session, job_id: str) -> list[Checkpoint]:
    """Every checkpoint the job reported, oldest step first."""
    query = select(Checkpoint).where(Checkpoint.job_id == job_id)
    return list(s.scalars(query.order_by(Checkpoint.step, Checkpoint.created_at)))


def is_model(checkpoint: Checkpoint) -> bool:
    """A stored checkpoint that is a model a user can sample from (not a resumable state)."""
    return checkpoint.path in MODEL_DIRS and checkpoint.store_key is not None


def delivered(job: Job, checkpoints: list[Checkpoint]) -> Checkpoint | None:
    """The fine-tuned model of a finished job: its best checkpoint by validation reward, else
    the last model it saved (SFT and DPO report no evals)."""
    if job.status not in (states.SUCCEEDED, states.EARLY_STOPPED):
        return None
    models = [c for c in checkpoints if is_model(c)]
    best = [c for c in models if c.is_best]
    return (best or models or [None])[-1]


def job_object(
    ft: FineTuningJob, job: Job, tenant_name: str, fine_tuned: Checkpoint | None
) -> dict[str, Any]:
    method = ft.method
    error = job.error if job.status == states.FAILED else None
    return {
        "id": ft.id,
        "object": "fine_tuning.job",
        "created_at": int(ft.created_at),
        "error": None if error is None else {k: error.get(k) for k in ("code", "message", "param")},
        "fine_tuned_model": None if fine_tuned is None else model_name(ft, tenant_name),
        "finished_at": None if job.finished_at is None else int(job.finished_at),
        "hyperparameters": {
            k: method["hyperparameters"][k]
            for k in ("batch_size", "learning_rate_multiplier", "n_epochs")
        },
        "model": ft.model,
        "organization_id": tenant_name,
        "result_files": [],
        "seed": ft.seed,
        "status": status(job),
        "trained_tokens": None,
        "training_file": ft.training_file,
        "validation_file": ft.validation_file,
        "estimated_finish": None,
        "integrations": [],
        "metadata": ft.meta,
        "method": {"type": method["type"], method["type"]: _method_body(method)},
        "user_provided_suffix": ft.suffix,
    }


def _method_body(method: dict[str, Any]) -> dict[str, Any]:
    body = {"hyperparameters": method["hyperparameters"]}
    return {**body, "grader": method["grader"]} if "grader" in method else body


def checkpoint_object(
    ft: FineTuningJob, checkpoint: Checkpoint, tenant_name: str
) -> dict[str, Any]:
    metrics = {"step": float(checkpoint.step)}
    names = {"eval": "full_valid_mean_reward", "loss": "train_loss"}  # eval: validation reward
    metrics.update({names[k]: v for k, v in checkpoint.metrics.items() if k in names})
    return {
        "id": f"ftckpt-{checkpoint.id.split('-', 1)[-1]}",
        "object": "fine_tuning.job.checkpoint",
        "created_at": int(checkpoint.created_at),
        "fine_tuned_model_checkpoint": f"{model_name(ft, tenant_name)}:ckpt-step-{checkpoint.step}",
        "fine_tuning_job_id": ft.id,
        "metrics": metrics,
        "step_number": checkpoint.step,
    }


def event_object(ft: FineTuningJob, event: Event) -> dict[str, Any] | None:
    """The event as OpenAI's, or None for one OpenAI's feed has no place for (a delivery)."""
    data, kind, level = event.data, "message", event.level
    if event.type == "state":
        message = _state_message(data)
    elif event.type == "eval":
        kind = "metrics"
        message = f"Step {data['step']}: validation reward {data['score']:.4f}"
        data = metrics_data(data)
    elif event.type == "decision":
        verb = "Stopping early" if data.get("stop") else "Going on"
        message = f"{verb} ({data.get('rule')}): {data.get('reason')}"
    elif event.type == "checkpoint" and "rule" not in data:
        message = f"Checkpoint created at step {data.get('step')}"
    elif event.type == "log":
        message = data.get("message", "")
    else:
        return None
    return {
        "object": "fine_tuning.job.event",
        "id": f"ftevent-{event.id}",
        "created_at": int(event.created_at),
        "level": {"warning": "warn"}.get(level, level),
        "message": message,
        "data": data,
        "type": kind,
    }


SPLITS = {"train": "train_mean_reward", "eval": "valid_mean_reward"}  # a sub-grader's means


def metrics_data(report: dict[str, Any]) -> dict[str, Any]:
    """An eval report as OpenAI's metrics: the validation reward (the eval's score), the train
    reward (the mean of the steps since the eval before), the loss, and each sub-grader's
    train and validation means (`sub_graders`, a multigrader's)."""
    measured = report.get("metrics") or {}
    train = [v for k, v in measured.items() if k.startswith("train/") and k.endswith("/reward")]
    data = {
        "step": report["step"],
        "valid_mean_reward": report["score"],
        "full_valid_mean_reward": report["score"],
    }
    if train:
        data["train_mean_reward"] = sum(train) / len(train)
    if report.get("loss") is not None:
        data["train_loss"] = report["loss"]
    subs: dict[str, dict[str, float]] = {}
    for key, value in measured.items():  # train/<task>/score/<sub>, eval/<task>/score/<sub>
        head, _, sub = key.partition("/score/")
        split, _, task = head.partition("/")
        if sub and task and "/" not in task and split in SPLITS:
            subs.setdefault(sub, {})[SPLITS[split]] = value
    if subs:
        data["sub_graders"] = subs
    return data


def _state_message(data: dict[str, Any]) -> str:
    status_, reason = data["status"], data.get("reason")
    text = {
        states.VALIDATING: "Validating training file",
        states.QUEUED: "Fine-tuning job queued",
        states.STARTING: "Fine-tuning job starting",
        states.RUNNING: "Fine-tuning job started",
        states.STOPPING: "Fine-tuning job stopping",
        states.SUCCEEDED: "The job has successfully completed",
        states.EARLY_STOPPED: "The job has successfully completed: stopped early at its best "
        "checkpoint",
        states.FAILED: "The job failed",
        states.CANCELLED: "The job was cancelled",
    }.get(status_, f"Fine-tuning job {status_}")
    return f"{text} ({reason})" if reason else text
