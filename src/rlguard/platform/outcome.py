"""What a finished job measured, recorded beside its quote: GPU-hours, time on GPUs, how far it
got, and its reported steps' mean phase times (the quote's `step_s`, measured), so quotes can be
checked against what jobs did and the step model refitted (`rlguard jobs export-steps`); and, for
a watched job whose watch reported no eval, a note its final state carries (a wrong tag or path
would otherwise end as a plain success)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from rlguard.platform.db import Event, Job
from rlguard.platform.steps import mean_phases, step_rows


def measured(s: Session, job: Job, progress: float) -> dict[str, Any]:
    """`progress` is the job's last reported one; `projected_gpu_hours` its pace to the end."""
    reports = s.scalars(
        select(Event.data).where(Event.job_id == job.id, Event.type == "metrics")
    ).all()
    gpu_hours = job.gpu_seconds / 3600
    try:
        rows, problem = step_rows(job.id, job.quote, job.spec.get("setup"), list(reports)), None
    except ValueError as e:  # a setup the catalog no longer knows: the job still finishes
        rows, problem = [], " ".join(str(e).split())[:300]
    return {
        "gpu_hours": round(gpu_hours, 6),
        "run_s": round(job.gpu_seconds / job.gpus, 1),
        "progress": progress,
        "projected_gpu_hours": round(gpu_hours / progress, 6) if progress > 0 else None,
        "steps_reported": len(reports),
        "step_s": mean_phases(rows),
        **({"step_s_error": problem} if problem else {}),
    }


def no_eval_note(s: Session, job: Job) -> str | None:
    """What a watched job that ran and ends with no eval says in its final state; None else."""
    watch = job.spec.get("watch")
    if watch is None or job.started_at is None:
        return None
    evals = select(Event.id).where(Event.job_id == job.id, Event.type == "eval").limit(1)
    if s.scalar(evals) is not None:
        return None
    where = f"{watch['source']} {watch['path']!r}" if watch.get("path") else "the run's output"
    return (
        f"0 evals: its watch found no {watch['eval_tag']!r} in {where} "
        "(its no_eval warnings say what it found)"
    )
