"""A job's quote before it runs: the calibrated simulator's verl step for the job's setup, per
phase, times its steps, with an error band from the calibration's leave-one-run-out errors.

The step is `serverful_step`, the function `rlguard runtime simulate` runs for its baseline and
the calibration replays measured steps through, on the batches the simulator measures for seed 0,
so a quote is exactly what `rlguard runtime simulate --setup FILE --seeds 1` says of the baseline.

The band: for each phase, the calibration's in-domain runs, held-out ones included, each have a
leave-one-run-out error e = simulated / measured - 1; a measured time t sits in
[quote / (1 + max e), quote / (1 + min e)] if the job errs as the calibration's runs did. The
step's band adds the phases' bands (every phase erring the same way: the widest honest range).
With no errors in the calibration file the quote has no band, and says so. What of the job lies
outside the runs the band was measured on (calib/domain.py) is listed beside it.

The host range: the band's runs ran on data-centre hosts, and a host that drives the GPU faster
or slower moves every per-op term at once (`Coefficients.at_host_speed`), which no setup field
carries. The calibration writes the range of host factors its runs needed, blind ones included;
the quote is the same step at both ends of it, so a job whose time is mostly per-op work (a
small model on one GPU) sees how far its host alone could move it.
"""

from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING, Any

from pydantic import ValidationInfo, field_validator, model_validator

from rlguard.errors import InputError
from rlguard.runtime.calib.coefficients import Coefficients, load_coefficients
from rlguard.runtime.calib.domain import outside, shipped_domain
from rlguard.runtime.calib.job import JobFile, calibrated_job_profile, job_setup
from rlguard.runtime.calib.measured import PHASES
from rlguard.runtime.policies.datafile import read_mapping
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.sim.experiment import measured_batches
from rlguard.runtime.sim.hardware import GPUS, MODELS
from rlguard.runtime.sim.serverful import serverful_step
from rlguard.runtime.sim.setups import Setup, check_fits

if TYPE_CHECKING:  # fit.py imports scipy, which a quote does not need
    from rlguard.runtime.calib.fit import RunError

CALIBRATION = files("rlguard.runtime") / "data" / "verl_calibration.yaml"
CALIBRATION_NAME = "runtime/data/verl_calibration.yaml"
STEP_FUNCTION = f"{serverful_step.__module__}.{serverful_step.__qualname__}"
SEED = 0
# A quote runs in the API's request: bounds that keep it to seconds (65,536 sequences a step take
# 5 s on 2 loaded cores; a million dataset prompts 1 s).
MAX_SEQUENCES, MAX_DATASET_PROMPTS = 65_536, 1_000_000


class QuoteSetup(JobFile):
    """A job's setup as `rlguard runtime simulate --setup` reads it, its model and GPU checked
    against the catalog as it is read, its size bounded (a quote is computed while the API
    answers); `profile` (a file on the server) is refused: a quote is the calibrated model's."""

    @field_validator("dataset_prompts")
    @classmethod
    def _dataset_bound(cls, prompts: int) -> int:
        if prompts > MAX_DATASET_PROMPTS:
            raise ValueError(f"a quote draws at most {MAX_DATASET_PROMPTS:,} dataset prompts")
        return prompts

    @model_validator(mode="after")
    def _batch_bound(self) -> QuoteSetup:
        if self.prompts_per_step * self.samples_per_prompt > MAX_SEQUENCES:
            raise ValueError(
                f"prompts_per_step x samples_per_prompt: a quote simulates at most "
                f"{MAX_SEQUENCES:,} sequences a step (got "
                f"{self.prompts_per_step * self.samples_per_prompt:,})"
            )
        return self

    @field_validator("model", "gpu")
    @classmethod
    def _in_catalog(cls, key: str, info: ValidationInfo) -> str:
        catalog = MODELS if info.field_name == "model" else GPUS
        if key.lower() not in catalog:
            raise ValueError(f"unknown {info.field_name} {key!r} (known: {', '.join(catalog)})")
        return key

    @field_validator("profile")
    @classmethod
    def _calibrated(cls, profile: str | None) -> None:
        if profile is not None:
            raise ValueError("a quote uses the calibrated model: leave profile out")


def band_of(errors: list[RunError]) -> dict[str, Any]:
    """The band's numbers from in-domain runs' leave-one-run-out errors (held-out runs' too), as
    the calibration file holds them: per phase the smallest and largest signed error."""
    out = {"runs": len({e.run for e in errors}), "phases": {}}
    for phase in PHASES:
        signed = [e.error for e in errors if e.phase == phase]
        out["phases"][phase] = {
            "min_error": round(min(signed), 4),
            "max_error": round(max(signed), 4),
        }
    return out


def _calibration(key: str) -> dict[str, Any] | None:
    """What bench_calibration.py writes beside the coefficients under `key`, or None."""
    return read_mapping(CALIBRATION_NAME, CALIBRATION.read_text("utf-8")).get(key)


def load_band() -> dict[str, Any] | None:
    """The calibration's leave-one-run-out errors per phase, or None if the file has none."""
    return _calibration("leave_one_run_out")


def load_host_range() -> dict[str, Any] | None:
    """The smallest and largest host factor the calibration's runs needed, or None."""
    return _calibration("host_factor")


def _placed(
    job: QuoteSetup, where: str, coefficients: Coefficients | None = None
) -> tuple[Setup, TimeProfile]:
    """The simulator's setup and calibrated profile; InputError `where: FIELD: ...` if the
    simulator cannot place the job (its weights and one sequence's KV cache do not fit)."""
    setup = job_setup(job, where)
    profile = calibrated_job_profile(job, where, coefficients)
    tp = profile.gpus_per_actor
    try:
        check_fits(setup, profile)
    except InputError:
        on = f"{job.model} on {job.gpu}"
        memory = f"gpu_memory_utilization {job.engine.gpu_memory_utilization}"
        if job.n_gpus % tp:
            raise InputError(
                f"{where}: n_gpus: cannot place {on}: its weights need rollout engines of {tp} "
                f"GPUs (tensor parallel {tp} at {memory}), and {job.n_gpus} GPUs are not whole "
                "engines"
            ) from None
        longest = setup.workload.max_prompt + setup.workload.max_response
        raise InputError(
            f"{where}: {'rollout_tp' if job.rollout_tp else 'gpu'}: cannot place {on} at tensor "
            f"parallel {tp}: at {memory} its weights leave a KV cache of "
            f"{profile.kv_capacity_tokens} tokens, less than one sequence of {longest}"
        ) from None
    return setup, profile


def step_phases(
    job: QuoteSetup, where: str = "setup", coefficients: Coefficients | None = None
) -> tuple[dict[str, float], int]:
    """(mean seconds per phase of the simulated verl step, the rollout's tensor parallel), under
    the shipped coefficients or `coefficients`."""
    setup, profile = _placed(job, where, coefficients)
    reports = [
        serverful_step(batch, setup, profile, Prices()) for batch in measured_batches(setup, SEED)
    ]
    phases = {p: sum(r.phases[p] for r in reports) / len(reports) for p in PHASES}
    return phases, profile.gpus_per_actor


def _range(phases: dict[str, float], errors: dict[str, Any]) -> dict[str, list[float]]:
    out = {
        p: [phases[p] / (1 + errors[p]["max_error"]), phases[p] / (1 + errors[p]["min_error"])]
        for p in PHASES
    }
    out["total"] = [sum(out[p][0] for p in PHASES), sum(out[p][1] for p in PHASES)]
    return out


def quote(job: QuoteSetup, steps: int, where: str = "setup") -> dict[str, Any]:
    """The quote as the platform stores and shows it (seconds, GPU-hours)."""
    phases, tp = step_phases(job, where)
    step = {**phases, "total": sum(phases.values())}
    scale = steps / 3600 * job.n_gpus  # step seconds -> GPU-hours
    band = load_band()
    out: dict[str, Any] = {
        "status": "quoted",
        "function": STEP_FUNCTION,
        "calibration": CALIBRATION_NAME,
        "model": job.model,
        "gpu": job.gpu,
        "n_gpus": job.n_gpus,
        "rollout_tp": tp,
        "steps": steps,
        "step_s": {k: round(v, 3) for k, v in step.items()},
        "total_s": round(steps * step["total"], 1),
        "gpu_hours": round(scale * step["total"], 4),
        "band": None,
        "outside_domain": outside(shipped_domain(), job.model, job.gpu, job.engine),
    }
    if band is not None:
        ranges = _range(phases, band["phases"])
        out["band"] = {
            "source": f"{CALIBRATION_NAME}: leave_one_run_out ({band['runs']} in-domain runs)",
            "errors": {
                p: [band["phases"][p]["min_error"], band["phases"][p]["max_error"]] for p in PHASES
            },
            "step_s": {k: [round(lo, 3), round(hi, 3)] for k, (lo, hi) in ranges.items()},
            "total_s": [round(steps * x, 1) for x in ranges["total"]],
            "gpu_hours": [round(scale * x, 4) for x in ranges["total"]],
        }
    hosts = load_host_range()
    if hosts is not None:
        shipped = load_coefficients()
        ends = [
            step_phases(job, where, shipped.at_host_speed(hosts[end]))[0] for end in ("min", "max")
        ]
        totals = [sum(phases.values()) for phases in ends]
        out["host_range"] = {
            "source": f"{CALIBRATION_NAME}: host_factor ({hosts['runs']} runs)",
            "factors": [hosts["min"], hosts["max"]],
            "step_s": {
                **{p: [round(e[p], 3) for e in ends] for p in PHASES},
                "total": [round(t, 3) for t in totals],
            },
            "total_s": [round(steps * t, 1) for t in totals],
            "gpu_hours": [round(scale * t, 4) for t in totals],
        }
    return out
