"""`rlguard runtime calibrate`: fit a time profile to a user's own verl logs.

One run's logs cannot pin down every coefficient of the step model, so the shipped fit (to the
public measurements) keeps its shape and each phase gets one scale, fitted by least squares on
relative error: generation (decode, prefill and the phase switch together), scoring, training.
The trainer's communication stays at the catalog's bandwidth (calib/comm.py): no scale touches it.
The logs give the times and length statistics of each step; the job file says what ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlguard.errors import InputError
from rlguard.runtime.calib.coefficients import Coefficients, load_coefficients
from rlguard.runtime.calib.fit import MAX_ROUNDS, host_factor
from rlguard.runtime.calib.job import JobFile, calibrated_job_profile
from rlguard.runtime.calib.measured import PHASES, MeasuredStep, read_measured
from rlguard.runtime.calib.replay import (
    GENERATION,
    SCORING,
    SWITCH,
    TRAINING,
    Replay,
    compute_rate,
    exposed_comm_s,
    replay,
    simulate,
)
from rlguard.runtime.calib.verl_logs import read_verl_log
from rlguard.runtime.policies.profiles import TimeProfile

SCALED = {"generation": GENERATION + SWITCH, "scoring": SCORING, "training": TRAINING}
NEEDED = {
    "response_length_mean": "response_length/mean",
    "prompt_length_mean": "prompt_length/mean",
}


@dataclass(frozen=True)
class PhaseFit:
    phase: str
    steps: int
    measured_s: float  # mean over the steps
    shipped_s: float  # the shipped model's mean prediction
    scale: float

    @property
    def shipped_error(self) -> float:
        return self.shipped_s / self.measured_s - 1


def job_row(
    job: JobFile, tp: int, run: str, step: int, source: str, values: dict[str, Any]
) -> MeasuredStep:
    """One measured step of the job: what ran from the job file, the times and lengths from
    `values` (MeasuredStep's fields; others are ignored)."""
    row = MeasuredStep(
        run=run,
        step=step,
        source=source,
        model=job.model,
        gpu=job.gpu,
        n_gpus=job.n_gpus,
        rollout_tp=tp,
        enforce_eager=job.engine.enforce_eager,
        vllm_engine=job.engine.vllm_engine,
        max_num_seqs=job.engine.max_num_seqs,
        gpu_memory_utilization=job.engine.gpu_memory_utilization,
        algorithm=job.algorithm,
        prompts_per_step=job.prompts_per_step,
        n_samples=job.samples_per_prompt,
        max_prompt_length=job.max_prompt_length,
        max_response_length=job.max_response_length,
        lora_rank=job.lora_rank,
        **MeasuredStep.trainer_values(job.trainer),
        remove_padding=job.remove_padding,
        critic_remove_padding=job.critic_remove_padding,
        **{k: v for k, v in values.items() if k in MeasuredStep.model_fields},
    )
    return row if job.reference_model else row.model_copy(update={"ref_s": None})


def rows_from_logs(job: JobFile, where: str, logs: list[Path]) -> list[MeasuredStep]:
    """One row per logged step, the first step of each log left out (it warms up); a `.csv`
    file is read as rows of runtime/data/verl_steps.csv's columns, as they are (what
    `rlguard jobs export-steps` writes, its first steps already left out)."""
    tp = calibrated_job_profile(job, where).gpus_per_actor
    rows = []
    for log in logs:
        if log.suffix == ".csv":
            rows.extend(read_measured(log))
            continue
        steps = read_verl_log(log)
        for step, values in list(steps.items())[1:]:
            for field, key in NEEDED.items():
                if field not in values:
                    raise InputError(f"{log}: step {step} has no '{key}' metric")
            rows.append(job_row(job, tp, str(log), step, f"{log} step {step}", values))
    if not rows:
        raise InputError(f"{', '.join(map(str, logs))}: no step after the first to fit")
    return rows


def _comm_s(job: Replay, phase: str, c: Coefficients) -> float:
    """The phase's exposed communication under `c`: datasheet seconds that no scale changes
    (FSDP's depend on the compute rate the scale sets)."""
    if phase == "generation":
        return 0.0
    return exposed_comm_s(job, phase, *compute_rate(c, phase))


def _scaled(c: Coefficients, phase: str, scale: float) -> Coefficients:
    return c.model_copy(update={name: getattr(c, name) * scale for name in SCALED[phase]})


def _phase_scale(jobs: list[Replay], rest: np.ndarray, phase: str, shipped: Coefficients) -> float:
    """Least squares of (scale x rest + c') / m - 1, `rest` the shipped prediction less its
    exposed communication and c' the communication under the scaled coefficients, refitted until
    the scale stops moving (only FSDP's gathers move with it)."""
    measured = np.array([j.row.measured(phase) for j in jobs])
    scale = 1.0
    for _ in range(MAX_ROUNDS):
        comm = np.array([_comm_s(j, phase, _scaled(shipped, phase, scale)) for j in jobs])
        ratio, left = rest / measured, 1 - comm / measured
        new = float((ratio * left).sum() / (ratio**2).sum())
        if abs(new - scale) <= 1e-9 * scale:
            return new
        scale = new
    return scale


def fit_scales(
    rows: list[MeasuredStep], shipped: Coefficients
) -> tuple[Coefficients, list[PhaseFit]]:
    jobs = [replay(row) for row in rows]
    simulated = [simulate(job, shipped) for job in jobs]
    update, fits = {}, []
    for phase in PHASES:
        used = [
            (j, s[phase], s[phase] - _comm_s(j, phase, shipped))
            for j, s in zip(jobs, simulated, strict=True)
            if j.row.measured(phase) is not None
        ]
        used = [(j, p, rest) for j, p, rest in used if rest > 0]
        if not used:
            continue  # the logs lack this phase's timers: keep the shipped coefficients
        kept = [j for j, _, _ in used]
        scale = _phase_scale(kept, np.array([rest for _, _, rest in used]), phase, shipped)
        measured = float(np.mean([j.row.measured(phase) for j in kept]))
        predicted = float(np.mean([p for _, p, _ in used]))
        fits.append(PhaseFit(phase, len(used), measured, predicted, scale))
        update |= _scaled(shipped, phase, scale).model_dump(include=set(SCALED[phase]))
    return shipped.model_copy(update=update), fits


def calibrate(
    job: JobFile, where: str, logs: list[Path]
) -> tuple[TimeProfile, list[PhaseFit], float]:
    """The job's profile scaled to its logs, what each phase's scale came from, and the logs'
    host factor (calib/fit.py: one scale on every per-op term, the phases together), which says
    how this cluster's hosts compare with the calibration's and is reported, not applied."""
    rows = rows_from_logs(job, where, logs)
    shipped = load_coefficients()
    host = host_factor("logs", [replay(row) for row in rows], shipped)
    if host is None:
        timers = "timing_s/gen, timing_s/old_log_prob, timing_s/ref, timing_s/update_actor"
        raise InputError(
            f"{', '.join(map(str, logs))}: no step times a phase ({timers}): nothing to calibrate"
        )
    coefficients, fits = fit_scales(rows, shipped)
    profile = calibrated_job_profile(job, where, coefficients)
    return profile, fits, host
