"""Fit the step model to the shipped verl measurements and measure its fidelity: the coefficients
(written to the package, where `--setup FILE.yaml`, `calibrate` and the platform's quotes read
them, with the quote's band: the leave-one-run-out errors of every run's phases inside the domain,
held-out runs' included, whose prediction is the fit to every covered run), every run's
leave-one-run-out error per phase (a run out of the domain or held out is predicted, never
fitted; held-out runs are reported apart, and those of their phases a quote would flag nothing
for summarised apart again), the in-sample errors, each run's exposed communication, the fit
redone at other PCIe all-reduce bandwidths (the one catalog number measured rather than read off
a datasheet), how far measured verl generation sits above the roofline (the simulator's old
model, now its lower bound), the passes timed on a GPU's kernels (calib/kernels.py) against the
fitted compute, with the leave-one-run-out errors of a fit without them beside, what a quote of
each held-out run would flag as outside the domain, the held-out runs' worst in-domain errors
under other draws of their lengths, and each run's host factor (one scale on every per-op term).
Asserts nothing.

    python benchmarks/bench_calibration.py --out benchmarks/results/calibration.json
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from rlguard.io import write_json
from rlguard.runtime.calib.coefficients import SHIPPED, Coefficients, save_coefficients
from rlguard.runtime.calib.domain import findings, shipped_domain
from rlguard.runtime.calib.fit import (
    Features,
    RunError,
    features,
    fit,
    host_factor,
    leave_one_run_out,
    run_errors,
)
from rlguard.runtime.calib.job import EngineSettings
from rlguard.runtime.calib.kernels import KernelPass, kernel_passes, read_kernel_cells
from rlguard.runtime.calib.measured import PHASES, MeasuredStep, by_run, read_measured
from rlguard.runtime.calib.quote import band_of
from rlguard.runtime.calib.replay import Replay, compute_rate, exposed_comm_s, replay
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.sim.hardware import GB
from rlguard.runtime.sim.roofline import Assumptions, derive_profile
from rlguard.runtime.sim.serverful import serverful_step


def roofline_generation_s(job: Replay) -> float:
    """The simulated baseline's generation on the roofline profile of the run's model, GPU,
    tensor parallel and engine memory: what verl would take at datasheet speed."""
    a = Assumptions(
        gpu_memory_utilization=job.engine.gpu_memory_utilization,
        max_num_seqs=job.engine.max_num_seqs,
    )
    profile, _, _ = derive_profile("roofline", job.model, job.gpu, a, tp=job.row.rollout_tp)
    return serverful_step(job.batch, job.setup, profile, Prices()).phases["generation"]


def table(
    errors: list[RunError], outside: set[str], held: set[str], in_domain: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    """Rows of errors; `in_domain`: the (run, phase) pairs a quote would present its band for."""
    return [
        {
            "run": e.run,
            "generation_out_of_domain": e.run in outside,
            "held_out": e.run in held,
            "in_domain": (e.run, e.phase) in in_domain,
            "phase": e.phase,
            "steps": e.steps,
            "measured_s": round(e.measured_s, 2),
            "simulated_s": round(e.simulated_s, 2),
            "error": round(e.error, 4),
        }
        for e in errors
    ]


def in_sample(feats: list[Features], coefs: Coefficients) -> list[RunError]:
    """Each covered run's errors under the fit to every covered run (a run whose generation is
    out of the domain included: its scoring and training are fitted)."""
    runs = by_run(f.row for f in feats if not f.row.held_out)
    return [
        e
        for run in runs
        for e in run_errors(run, [f.job for f in feats if f.row.run == run], coefs)
    ]


def kernel_table(passes: list[KernelPass], coefs: Coefficients) -> list[dict[str, Any]]:
    """Each timed pass against the fitted compute terms (no micro-batch or offload cost: one pass
    of the kernels alone)."""
    out = []
    for p in passes:
        at_peak, per_pflop = compute_rate(coefs, p.phase)
        modelled = at_peak * p.at_peak_s + per_pflop * p.pflops
        out.append(
            {
                "gpu": p.gpu,
                "model": p.model,
                "mode": p.mode,
                "tokens": p.tokens,
                "measured_s": round(p.seconds, 4),
                "modelled_s": round(modelled, 4),
                "error": round(modelled / p.seconds - 1, 4),
                "mfu": round(p.at_peak_s / p.seconds, 3),
            }
        )
    return out


def communication(feats: list[Features], coefs: Coefficients) -> list[dict[str, Any]]:
    """Each run's exposed communication under the fitted compute rate, mean seconds a step
    (runtime/calib/comm.py)."""
    out = []
    for run in by_run(f.row for f in feats):
        jobs = [f.job for f in feats if f.row.run == run]
        means = {}
        for phase in ("scoring", "training"):
            rate = compute_rate(coefs, phase)
            means[phase] = round(float(np.mean([exposed_comm_s(j, phase, *rate) for j in jobs])), 2)
        out.append({"run": run, **means})
    return out


def above_roofline(feats: list[Features]) -> list[dict[str, Any]]:
    out = []
    for run in by_run(f.row for f in feats):
        jobs = [f.job for f in feats if f.row.run == run and f.row.gen_s is not None]
        if not jobs:
            continue
        measured = float(np.mean([j.row.gen_s for j in jobs]))
        roofline = float(np.mean([roofline_generation_s(j) for j in jobs]))
        out.append(
            {
                "run": run,
                "measured_generation_s": round(measured, 2),
                "roofline_generation_s": round(roofline, 2),
                "measured_over_roofline": round(measured / roofline, 2),
            }
        )
    return out


# All-reduce bus bandwidth (GB/s, nccl-tests) over PCIe Gen4 x16 without NVLink, the catalog's
# 22 among them: the link's own rate, and what 4 RTX 4090s were reported to reach (no L20 or L40S
# table is published): 25.7 at 256 MB with a P2P-enabling driver
# (github.com/tinygrad/open-gpu-kernel-modules/issues/36), 22 with P2P and 18 through host memory
# (github.com/NVIDIA/nccl/issues/1603).
INTERCONNECTS_GB_S = (32.0, 25.7, 22.0, 18.0)
TRAINER_PHASES = ("scoring", "training")  # the phases whose communication the bandwidth sets


def at_pcie_bandwidth(feats: list[Features], gb_s: float) -> list[Features]:
    """The steps with every PCIe GPU's all-reduce bandwidth set to `gb_s` (no NVLink GPU moves)."""
    return [
        replace(f, job=replace(f.job, gpu=replace(f.job.gpu, interconnect=gb_s * GB)))
        if f.job.gpu.interconnect < 100 * GB
        else f
        for f in feats
    ]


def interconnect_sensitivity(
    feats: list[Features], passes: list[KernelPass], fitted_in: set[tuple[str, str]]
) -> dict[str, Any]:
    """The whole fit redone at each PCIe bandwidth: how the leave-one-run-out errors in scoring
    and training, covered and held out, depend on the one number the catalog takes from
    measurements rather than a datasheet."""
    out, fitted_runs = {}, {run for run, _ in fitted_in}
    for gb_s in INTERCONNECTS_GB_S:
        loro = leave_one_run_out(at_pcie_bandwidth(feats, gb_s), passes)
        trained = [e for e in loro if e.phase in TRAINER_PHASES]
        out[str(gb_s)] = {
            "summary_covered": summary(
                [e for e in trained if (e.run, e.phase) in fitted_in], TRAINER_PHASES
            ),
            "summary_held_out": summary(
                [e for e in trained if e.run not in fitted_runs], TRAINER_PHASES
            ),
            "errors": {f"{e.run} {e.phase}": round(e.error, 4) for e in trained},
        }
    return out


def quote_findings(rows: list[MeasuredStep]) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """What a quote of each run's setup would say lies outside the calibration's domain, and in
    which phases (none: its band would be presented as measured on jobs like it)."""
    return {
        run: findings(
            shipped_domain(),
            row.model,
            row.gpu,
            EngineSettings(
                enforce_eager=row.enforce_eager is not False, vllm_engine=row.vllm_engine
            ),
        )
        for run, (row, *_) in sorted(by_run(rows).items())
    }


def host_factors(feats: list[Features], coefs: Coefficients) -> list[dict[str, Any]]:
    """Each run's host factor (calib/fit.py) under the shipped fit (in sample for a covered run,
    a prediction for a held-out one), with its errors before and after: whether one unobserved
    number, the host's speed, accounts for a run's misses. A diagnostic read after the errors:
    nothing is fitted with it; their range goes beside the coefficients, where a quote reads
    it (calib/quote.py)."""
    out = []
    for run, steps in by_run(f.row for f in feats).items():
        jobs = [f.job for f in feats if f.row.run == run]
        factor = host_factor(run, jobs, coefs)
        if factor is None:  # no phase timed: nothing to scale
            continue
        at_factor = run_errors(run, jobs, coefs.at_host_speed(factor))
        out.append(
            {
                "run": run,
                "held_out": steps[0].held_out,
                "factor": round(factor, 3),
                "errors_shipped": {
                    e.phase: round(e.error, 4) for e in run_errors(run, jobs, coefs)
                },
                "errors_at_factor": {e.phase: round(e.error, 4) for e in at_factor},
            }
        )
    return out


def worst_by_draw(
    rows: list[MeasuredStep], coefs: Coefficients, pairs: set[tuple[str, str]], draws: int
) -> list[dict[str, float]]:
    """Per phase, the largest |error| over the (run, phase) `pairs` of these runs (predicted by
    the shipped fit), for the rows' own length draw and `draws - 1` others: whether a bound holds
    on the statistics the logs give or on one batch drawn from them."""
    out = []
    for draw in range(draws):
        worst: dict[str, float] = {}
        for run, steps in by_run(rows).items():
            for e in run_errors(run, [replay(row, draw) for row in steps], coefs):
                if (e.run, e.phase) in pairs:
                    worst[e.phase] = round(max(worst.get(e.phase, 0.0), abs(e.error)), 4)
        out.append(worst)
    return out


def summary(errors: list[RunError], phases: tuple[str, ...] = PHASES) -> dict[str, Any]:
    out = {}
    for phase in phases:
        errs = [abs(e.error) for e in errors if e.phase == phase]
        if not errs:
            continue
        out[phase] = {
            "runs": len(errs),
            "max_abs_error": round(max(errs), 4),
            "median_abs_error": round(float(np.median(errs)), 4),
            "within_20pct": sum(e <= 0.20 for e in errs),
            "within_25pct": sum(e <= 0.25 for e in errs),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/calibration.json"))
    parser.add_argument("--coefficients", type=Path, default=Path(str(SHIPPED)))
    args = parser.parse_args()
    start = time.perf_counter()
    rows = read_measured()
    feats = features(rows)
    passes = kernel_passes(read_kernel_cells())
    coefs = fit(feats, passes)
    fitted_rows = [r for r in rows if not r.held_out]
    about = {
        "fitted_to": "runtime/data/verl_steps.csv, runtime/data/kernel_passes.csv",
        "runs": len(by_run(fitted_rows)),
        "steps": len(fitted_rows),
        "command": "python benchmarks/bench_calibration.py",
    }
    loro = leave_one_run_out(feats, passes)
    reasons = {r.run: r.generation_out_of_domain for r in rows if r.generation_out_of_domain}
    gen_outside, held = set(reasons), {r.run for r in rows if r.held_out}
    fitted_in = {(r.run, phase) for r in rows for phase in PHASES if r.fitted(phase)}
    covered = [e for e in loro if (e.run, e.phase) in fitted_in]
    without = [e for e in leave_one_run_out(feats, []) if (e.run, e.phase) in fitted_in]
    held_findings = quote_findings([r for r in rows if r.held_out])
    held_in = {
        (run, phase)
        for run, found in held_findings.items()
        for phase in PHASES
        if not any(phase in phases for _, phases in found)
    }
    in_domain = fitted_in | held_in
    banded = [e for e in loro if (e.run, e.phase) in in_domain]
    hosts = host_factors(feats, coefs)
    factors = [h["factor"] for h in hosts]
    host_range = {"runs": len(factors), "min": min(factors), "max": max(factors)}
    save_coefficients(
        coefs,
        args.coefficients,
        {**about, "leave_one_run_out": band_of(banded), "host_factor": host_range},
    )
    fitted = in_sample(feats, coefs)
    payload = {
        **about,
        "coefficients": coefs.model_dump(),
        "leave_one_run_out": {
            "summary": summary(loro),
            "summary_covered": summary(covered),
            "summary_full_fine_tunes": summary(
                [e for e in covered if e.run in {r.run for r in rows if r.lora_rank == 0}]
            ),
            "summary_in_domain_with_held_out": summary(banded),
            "runs": table([e for e in loro if e.run not in held], gen_outside, held, in_domain),
            "summary_covered_without_kernel_passes": summary(without),
            "runs_without_kernel_passes": table(without, gen_outside, held, in_domain),
        },
        "held_out": {
            "runs_held_out": sorted(held),
            "note": "set aside before any model choice; predicted by the fit to every covered run",
            "summary": summary([e for e in loro if e.run in held]) if held else {},
            "summary_in_domain": summary([e for e in loro if (e.run, e.phase) in held_in]),
            "worst_in_domain_by_length_draw": worst_by_draw(
                [r for r in rows if r.held_out], coefs, held_in, draws=6
            ),
            "runs": table([e for e in loro if e.run in held], gen_outside, held, in_domain),
            "outside_domain": {
                run: [note for note, _ in found] for run, found in held_findings.items()
            },
        },
        "in_sample": {
            "summary": summary(fitted),
            "runs": table(fitted, gen_outside, held, in_domain),
        },
        "generation_out_of_domain": reasons,
        "kernel_passes": kernel_table(passes, coefs),
        "communication_s": communication(feats, coefs),
        "interconnect_sensitivity": interconnect_sensitivity(feats, passes, fitted_in),
        "above_roofline": above_roofline(feats),
        "host_factor": hosts,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    write_json(args.out, payload)
    print(args.out)


if __name__ == "__main__":
    main()
