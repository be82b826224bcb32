"""Jobs: what the platform is told at submission (JobSpec) and what only the world knows (JobTruth).

Policies and stop rules only ever see JobSpec fields and eval events; the engine and the metrics
hold the JobTruth. Keeping the two in separate objects is what makes the labels unreachable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from rlguard.cluster.curves import GaoCurve, MeasuredCurve, SaturatingCurve

RlhfCurve = GaoCurve | MeasuredCurve
"""The eval curves of RLHF jobs: they carry a hacking label and a proxy reward."""


class JobKind(StrEnum):
    LORA_SFT = "lora-sft"
    DPO = "dpo"
    RLHF = "rlhf"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job as submitted: GPU count, arrival, the user's duration estimate, its eval cadence."""

    job_id: str
    kind: JobKind
    gpus: int
    submit_s: float
    estimate_s: float
    n_evals: int


@dataclass(frozen=True)
class JobTruth:
    """Ground truth of a job: true duration, true curves and the noise its evals will carry.

    The noise is drawn once per job so that every rule sees the same observations (paired runs).
    """

    duration_s: float
    eval_curve: RlhfCurve | SaturatingCurve
    loss_curve: SaturatingCurve
    eval_noise: np.ndarray
    loss_noise: np.ndarray
    proxy_slope: float | None = None
    eval_points: np.ndarray = field(init=False)
    true_scores: np.ndarray = field(init=False)
    observed_scores: np.ndarray = field(init=False)
    observed_losses: np.ndarray = field(init=False)
    observed_proxies: np.ndarray | None = field(init=False)

    def __post_init__(self) -> None:
        points = np.arange(1, len(self.eval_noise) + 1) / len(self.eval_noise)
        true = np.asarray(self.eval_curve(points), dtype=float)
        set_ = object.__setattr__
        set_(self, "eval_points", points)
        set_(self, "true_scores", true)
        set_(self, "observed_scores", np.clip(true + self.eval_noise, 0.0, 1.0))
        set_(self, "observed_losses", self.loss_curve(points) * (1.0 + self.loss_noise))
        proxies = None
        if self.proxy_slope is not None and isinstance(self.eval_curve, RlhfCurve):
            proxies = self.eval_curve.proxy_reward(points, self.proxy_slope)
        set_(self, "observed_proxies", proxies)

    @property
    def hacking(self) -> bool:
        """The label: the RLHF curve turns over in its horizon (a measured one: its file label)."""
        return isinstance(self.eval_curve, RlhfCurve) and self.eval_curve.hacks

    @property
    def peak_score(self) -> float:
        """The best true score over the checkpoints the job evaluates: what it could deliver."""
        return float(self.true_scores.max())


@dataclass(frozen=True)
class Workload:
    """Jobs to simulate, in submission order, with their truths aligned by index."""

    specs: list[JobSpec]
    truths: list[JobTruth]
    name: str = "workload"

    def __post_init__(self) -> None:
        if len(self.specs) != len(self.truths):
            raise ValueError("specs and truths must align")
