"""Fit the calibrated step model to measured verl steps by least squares, and measure how well it
predicts runs it has not seen (leave one run out).

Residuals are relative (a 10 s step and a 1,000 s step count alike) and each run weighs the same
however many steps it logged. Passes timed on a GPU's own kernels (calib/kernels.py) join the
scoring and training fits as one more run per GPU class and phase: they anchor the compute terms,
and no run is ever left out of them. Coefficients are non-negative (scipy's NNLS): each is a time
or a multiplier of one. Generation is the slowest actor's time: the fit takes each step's slowest
actor under the current coefficients and refits until that choice no longer changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar, nnls

from rlguard.errors import InputError
from rlguard.runtime.calib.coefficients import Coefficients
from rlguard.runtime.calib.kernels import KernelPass, fit_rows
from rlguard.runtime.calib.measured import PHASES, MeasuredStep, by_run
from rlguard.runtime.calib.replay import (
    COMPUTE_TERMS,
    GENERATION,
    SCORING,
    SWITCH,
    TRAINING,
    Replay,
    exposed_comm_s,
    generation_features,
    replay,
    scoring_features,
    simulate,
    training_features,
)

MAX_ROUNDS = 50
# Multipliers of roofline time never below 1: no measured step beats the datasheet.
FLOOR = {"memory": 1.0, "generation_compute": 1.0, "forward": 1.0, "train": 1.0}


@dataclass(frozen=True)
class Features:
    """A measured step's features, computed once (generation needs a schedule simulation)."""

    @property
    def row(self) -> MeasuredStep:
        return self.job.row

    job: Replay
    actors: np.ndarray
    switch: np.ndarray
    scoring: np.ndarray
    training: np.ndarray


def features(rows: Sequence[MeasuredStep]) -> list[Features]:
    out = []
    for row in rows:
        job = replay(row)
        actors, switch = generation_features(job)
        out.append(Features(job, actors, switch, scoring_features(job), training_features(job)))
    return out


def _weights(rows: Sequence[MeasuredStep]) -> np.ndarray:
    counts = {run: len(steps) for run, steps in by_run(rows).items()}
    return np.array([1 / np.sqrt(counts[r.run]) for r in rows])


def _solve(
    a: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray,
    names: tuple[str, ...],
    fixed: np.ndarray | None = None,
) -> np.ndarray:
    """Non-negative least squares on relative error, each coefficient at least its FLOOR; the
    `fixed` seconds (communication) are part of each step's time but scaled by no coefficient."""
    if len(target) == 0:
        raise InputError(f"no measured step has a time to fit {names[0]}")
    floor = np.array([FLOOR.get(name, 0.0) for name in names])
    scale = weight / target
    rest = target - a @ floor - (0.0 if fixed is None else fixed)
    above, _ = nnls(a * scale[:, None], rest * scale)
    return floor + above


def _fit_generation(feats: list[Features]) -> np.ndarray:
    used = [
        f for f in feats if f.row.fitted("generation") and f.row.measured("generation") is not None
    ]
    target = np.array([f.row.measured("generation") for f in used])
    weight = _weights([f.row for f in used])
    n_gen = len(GENERATION)
    coef = np.ones(n_gen + len(SWITCH))
    chosen = None
    for _ in range(MAX_ROUNDS):
        slowest = [int(np.argmax(f.actors @ coef[:n_gen])) for f in used]
        if slowest == chosen:
            break
        chosen = slowest
        a = np.array(
            [np.concatenate([f.actors[i], f.switch]) for f, i in zip(used, chosen, strict=True)]
        )
        coef = _solve(a, target, weight, GENERATION + SWITCH)
    return coef


def _fit_phase(
    feats: list[Features], kernels: Sequence[KernelPass], phase: str, names: tuple[str, ...]
) -> np.ndarray:
    """The exposed communication a step pays depends on the compute rate being fitted (FSDP
    hides its gathers behind compute): it starts from compute at peak and is refitted until the
    rate no longer moves."""
    used = [f for f in feats if f.row.fitted(phase) and f.row.measured(phase) is not None]
    timed = [p for p in kernels if p.phase == phase]
    a = np.array([getattr(f, phase) for f in used]).reshape(len(used), len(names))
    a = np.vstack([a, fit_rows(timed, phase, names)])
    target = np.array([f.row.measured(phase) for f in used] + [p.seconds for p in timed])
    weight = np.concatenate([_weights([f.row for f in used]), _kernel_weights(timed)])
    rate = [names.index(name) for name in COMPUTE_TERMS[phase]]
    coef = np.array([FLOOR.get(name, 0.0) for name in names])
    for _ in range(MAX_ROUNDS):
        comm = [exposed_comm_s(f.job, phase, *coef[rate]) for f in used]
        fitted = _solve(a, target, weight, names, np.array(comm + [0.0] * len(timed)))
        if np.allclose(fitted[rate], coef[rate], rtol=1e-9, atol=0.0):
            return fitted
        coef = fitted
    return coef


def _kernel_weights(timed: Sequence[KernelPass]) -> np.ndarray:
    """Each GPU class's timed passes weigh as one run of that many steps."""
    counts: dict[str, int] = {}
    for p in timed:
        counts[p.gpu] = counts.get(p.gpu, 0) + 1
    return np.array([1 / np.sqrt(counts[p.gpu]) for p in timed])


def fit(feats: list[Features], kernels: Sequence[KernelPass]) -> Coefficients:
    """Least squares, each phase over the steps whose runs the model covers in it
    (`MeasuredStep.fitted`: not held out; generation also not out of the domain), scoring and
    training also over the `kernels`' timed passes."""
    named = dict(zip(GENERATION + SWITCH, _fit_generation(feats).tolist(), strict=True))
    for phase, names in (("scoring", SCORING), ("training", TRAINING)):
        named |= dict(zip(names, _fit_phase(feats, kernels, phase, names).tolist(), strict=True))
    return Coefficients(**named)


@dataclass(frozen=True)
class RunError:
    """One run's mean measured and simulated time in one phase, the simulation fitted without
    that run."""

    run: str
    phase: str
    steps: int
    measured_s: float
    simulated_s: float

    @property
    def error(self) -> float:
        return self.simulated_s / self.measured_s - 1


def run_errors(run: str, jobs: list[Replay], coefs: Coefficients) -> list[RunError]:
    """One run's mean measured and simulated time per phase under these coefficients."""
    simulated = [simulate(job, coefs) for job in jobs]
    errors = []
    for phase in PHASES:
        pairs = [
            (job.row.measured(phase), sim[phase])
            for job, sim in zip(jobs, simulated, strict=True)
            if job.row.measured(phase) is not None
        ]
        if pairs:
            measured, sim = np.mean(pairs, axis=0)
            errors.append(RunError(run, phase, len(pairs), float(measured), float(sim)))
    return errors


def host_factor(run: str, jobs: list[Replay], coefs: Coefficients) -> float | None:
    """The one factor on every per-op term (`Coefficients.at_host_speed`) that best fits the
    run's phases together, least squares on relative error, the rest of `coefs` as it is: how
    much slower (above 1) or faster its host did the per-op work than the fitted runs' hosts.
    None if the steps time no phase."""
    if not run_errors(run, jobs, coefs):
        return None

    def loss(log_factor: float) -> float:
        errors = run_errors(run, jobs, coefs.at_host_speed(float(np.exp(log_factor))))
        return sum(e.error**2 for e in errors)

    return float(np.exp(minimize_scalar(loss, bounds=(-3, 3), method="bounded").x))


def leave_one_run_out(feats: list[Features], kernels: Sequence[KernelPass]) -> list[RunError]:
    """Each run simulated with the coefficients fitted to the others (and to every timed kernel
    pass): a held-out run, or a run's generation out of the domain, is predicted like any other
    though no fit uses it (so a held-out run's prediction is the fit to every covered run)."""
    errors = []
    for run in by_run(f.row for f in feats):
        coefs = fit([f for f in feats if f.row.run != run], kernels)
        errors += run_errors(run, [f.job for f in feats if f.row.run == run], coefs)
    return errors
