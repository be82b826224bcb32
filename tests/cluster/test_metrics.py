"""Metric definitions on a three-job scenario worked out by hand (zero noise, FIFO, 16 GPUs).

Jobs (8 GPUs each):
  h: RLHF that hacks (Gao curve peaking at progress 1/3), submit 0, 900 s, 9 evals (every 100 s);
  g: healthy RLHF (peak beyond its horizon), submit 0, 1800 s, 6 evals (every 300 s);
  d: DPO (saturating, rising), submit 50, 1000 s, 4 evals (every 250 s); waits for a free node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pytest

from rlguard.cluster.curves import GaoCurve, SaturatingCurve
from rlguard.cluster.engine import Engine
from rlguard.cluster.events import CONTINUE, Decision, EvalEvent
from rlguard.cluster.jobs import JobKind, JobSpec, JobTruth, Workload
from rlguard.cluster.metrics import summarize
from rlguard.cluster.policies.fifo import Fifo
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.stopping.base import StopRule
from rlguard.cluster.stopping.evalstop import EvalStop

H = 3600.0
ALPHA, BETA = 0.35, 0.15
D_STAR = float(np.exp(ALPHA / BETA - 1.0))


def job(
    job_id: str,
    kind: JobKind,
    curve: GaoCurve | SaturatingCurve,
    *,
    submit_s: float,
    duration_s: float,
    n_evals: int,
    gpus: int = 8,
) -> tuple[JobSpec, JobTruth]:
    spec = JobSpec(job_id, kind, gpus, submit_s, duration_s, n_evals)
    truth = JobTruth(
        duration_s=duration_s,
        eval_curve=curve,
        loss_curve=SaturatingCurve(2.0, 1.0, 0.3),
        eval_noise=np.zeros(n_evals),
        loss_noise=np.zeros(n_evals),
    )
    return spec, truth


@pytest.fixture
def workload() -> Workload:
    jobs = [
        job(
            "h",
            JobKind.RLHF,
            GaoCurve(ALPHA, BETA, 3.0 * D_STAR, 0.4, 0.3),
            submit_s=0.0,
            duration_s=900.0,
            n_evals=9,
        ),
        job(
            "g",
            JobKind.RLHF,
            GaoCurve(ALPHA, BETA, 0.5 * D_STAR, 0.4, 0.3),
            submit_s=0.0,
            duration_s=1800.0,
            n_evals=6,
        ),
        job(
            "d",
            JobKind.DPO,
            SaturatingCurve(0.3, 0.6, 0.3),
            submit_s=50.0,
            duration_s=1000.0,
            n_evals=4,
        ),
    ]
    w = Workload([s for s, _ in jobs], [t for _, t in jobs], name="hand")
    h, g, d = w.truths
    # Premises of the hand computation.
    assert h.hacking and not g.hacking and not d.hacking
    assert int(np.argmax(h.true_scores)) == 2 and h.true_scores[3] < h.true_scores[2]
    assert np.all(np.diff(g.true_scores) > 0) and np.all(np.diff(d.true_scores) > 0)
    return w


class StopAt(StopRule):
    """Stops the named jobs at the given step, whatever their scores (all job kinds)."""

    name = "stop-at"

    def __init__(self, steps: Mapping[str, int]) -> None:
        super().__init__(job_kinds=[str(k) for k in JobKind])
        self.steps = dict(steps)

    def new_state(self) -> None:
        return None

    def decide(self, state: None, event: EvalEvent) -> Decision:
        if self.steps.get(event.job_id) == event.step:
            return Decision(True, "told to")
        return CONTINUE


def summary(workload: Workload, rule: StopRule | None) -> dict:
    result = Engine(workload, Scheduler(Fifo(), rule), gpus=16, restore_s=60.0).run()
    return summarize(result, workload)


def p95(values: Iterable[float]) -> float:
    """Linear-interpolated 95th percentile of three values, by hand."""
    _, b, c = sorted(values)
    return b + 0.9 * (c - b)


def test_evalstop_stops_the_hacker_only(workload) -> None:
    # h stops at its 4th eval (400 s; best = eval 3 at 300 s); d starts at 400, ends at 1400;
    # g runs to 1800. JCTs: 400, 1800, 1350 s.
    m = summary(workload, EvalStop(k=1, warmup=0))
    jct = [400.0, 1800.0, 1350.0]
    assert m["jobs"] == 3
    assert m["rlhf_jobs"] == 2
    assert m["hacking_jobs"] == 1
    assert m["stopped"] == 1
    assert (m["precision"], m["recall"], m["fpr"], m["f1"]) == (1.0, 1.0, 0.0, 1.0)
    assert m["jct_mean_h"] == pytest.approx(sum(jct) / 3 / H)
    assert m["jct_p95_h"] == pytest.approx(p95(jct) / H)  # 1755 s
    assert m["makespan_h"] == pytest.approx(1800.0 / H)
    busy = 8 * (400.0 + 1800.0 + 1000.0) / H
    assert m["gpu_h"] == pytest.approx(busy)
    assert m["gpu_util"] == pytest.approx(busy / (16 * 1800.0 / H))  # 0.888...
    assert m["waste_gpu_h"] == pytest.approx(8 * (400.0 - 300.0) / H)
    # Every job delivers its true peak: h's best observed eval is its peak, g and d end at theirs.
    assert m["quality_regret"] == pytest.approx(0.0, abs=1e-12)
    assert m["quality_regret_rlhf"] == pytest.approx(0.0, abs=1e-12)
    h, g, d = workload.truths
    expected_quality = (h.true_scores[2] + g.true_scores[-1] + d.true_scores[-1]) / 3
    assert m["quality"] == pytest.approx(expected_quality)
    assert m["preemptions"] == 0


def test_without_a_rule_the_hacker_wastes_its_tail(workload) -> None:
    # Nothing stops: h 0..900 (best at 300 s), g 0..1800, d 900..1900. JCTs: 900, 1800, 1850.
    m = summary(workload, None)
    jct = [900.0, 1800.0, 1850.0]
    assert m["stopped"] == 0
    assert m["precision"] is None  # no RLHF job stopped: undefined
    assert (m["recall"], m["fpr"], m["f1"]) == (0.0, 0.0, 0.0)
    assert m["jct_mean_h"] == pytest.approx(sum(jct) / 3 / H)
    assert m["jct_p95_h"] == pytest.approx(p95(jct) / H)
    assert m["makespan_h"] == pytest.approx(1900.0 / H)
    busy = 8 * (900.0 + 1800.0 + 1000.0) / H
    assert m["gpu_util"] == pytest.approx(busy / (16 * 1900.0 / H))
    assert m["waste_gpu_h"] == pytest.approx(8 * (900.0 - 300.0) / H)
    assert m["quality_regret"] == pytest.approx(0.0, abs=1e-12)


def test_false_positive_and_missed_hacker(workload) -> None:
    # The rule stops healthy g at step 2 (600 s) and DPO d at step 2, never h.
    # h 0..900 (best at 300 s); g 0..600 (best = eval 2 at 600 s); d 600..1100 (eval 2 at 500 s
    # of its run). JCTs: 900, 600, 1050 s. Makespan 1100 s.
    m = summary(workload, StopAt({"g": 2, "d": 2}))
    h, g, d = workload.truths
    jct = [900.0, 600.0, 1050.0]
    assert m["stopped"] == 2  # all stopped jobs count here...
    # ... but detection is over RLHF only: tp 0, fp 1 (g), fn 1 (h), 1 healthy RLHF job.
    assert (m["precision"], m["recall"], m["fpr"], m["f1"]) == (0.0, 0.0, 1.0, 0.0)
    assert m["jct_mean_h"] == pytest.approx(sum(jct) / 3 / H)
    assert m["jct_p95_h"] == pytest.approx(p95(jct) / H)  # 1035 s
    assert m["makespan_h"] == pytest.approx(1100.0 / H)
    busy = 8 * (900.0 + 600.0 + 500.0) / H
    assert m["gpu_h"] == pytest.approx(busy)
    assert m["gpu_util"] == pytest.approx(busy / (16 * 1100.0 / H))  # 0.909...
    # Waste: only h ran past its best checkpoint (600 s after it); g and d stopped at their best.
    assert m["waste_gpu_h"] == pytest.approx(8 * 600.0 / H)
    # Regret: g and d delivered eval 2 instead of their last (peak) eval.
    regret_g = g.true_scores[-1] - g.true_scores[1]
    regret_d = d.true_scores[-1] - d.true_scores[1]
    assert regret_g > 0 and regret_d > 0
    assert m["quality_regret"] == pytest.approx((0.0 + regret_g + regret_d) / 3)
    assert m["quality_regret_rlhf"] == pytest.approx((0.0 + regret_g) / 2)
    quality = (h.true_scores[2] + g.true_scores[1] + d.true_scores[1]) / 3
    assert m["quality"] == pytest.approx(quality)


def test_regret_is_against_the_true_peak_over_evaluated_checkpoints(workload) -> None:
    h = workload.truths[0]
    assert h.peak_score == pytest.approx(float(h.true_scores.max()))
    assert h.peak_score == pytest.approx(0.4 + 0.3)  # s0 + gain: eval 3 sits on the Gao peak
