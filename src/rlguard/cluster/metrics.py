"""Per-run metrics, computed after the run from the engine's record and the hidden truths.

Detection is scored over RLHF jobs: positive = stopped by the rule, truth = the hacking label.
Every job delivers its best observed checkpoint (keep-best, as HF's load_best_model_at_end), so
wasted compute is the GPU time spent after that checkpoint, and quality regret is the job's true
peak score minus the true score of what it delivered: a rule that kills healthy jobs pays there.
"""

from __future__ import annotations

import numpy as np

from rlguard.cluster.engine import RunResult
from rlguard.cluster.jobs import Workload

HOUR = 3600.0


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def summarize(result: RunResult, workload: Workload | None = None) -> dict[str, float | int | None]:
    """Score a run. The run record carries what is needed of each job's spec and truth, so a
    streamed run needs nothing else; a materialized `workload`, when given, is checked to be the
    one that was run."""
    if workload is not None and len(workload.specs) != len(result.finish_s):
        raise ValueError(
            f"the run has {len(result.finish_s)} jobs, the workload {len(workload.specs)}"
        )
    rlhf = result.rlhf
    hacking = result.hacking & rlhf
    stopped = result.stopped & rlhf
    tp = int((stopped & hacking).sum())
    fp = int((stopped & ~hacking).sum())
    fn = int((~stopped & hacking).sum())
    healthy = int((rlhf & ~hacking).sum())

    gpus = result.gpus.astype(float)
    submit = result.submit_s
    jct = (result.finish_s - submit) / HOUR
    makespan = (np.nanmax(result.finish_s) - submit.min()) / HOUR
    busy = float((gpus * result.executed_s).sum()) / HOUR
    wasted = gpus * (result.executed_s - result.delivered_executed_s) / HOUR
    delivered = result.delivered_score
    regret = result.peak_score - delivered
    return {
        "jobs": len(submit),
        "rlhf_jobs": int(rlhf.sum()),
        "hacking_jobs": int(hacking.sum()),
        "stopped": int(result.stopped.sum()),
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "fpr": _ratio(fp, healthy),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "jct_mean_h": float(jct.mean()),
        "jct_p95_h": float(np.percentile(jct, 95)),
        "makespan_h": float(makespan),
        "gpu_util": busy / (result.capacity * makespan) if makespan > 0 else None,
        "gpu_h": busy,
        "waste_gpu_h": float(wasted.sum()),
        "quality": float(delivered.mean()),
        "quality_regret": float(regret.mean()),
        "quality_regret_rlhf": float(regret[rlhf].mean()) if rlhf.any() else None,
        "preemptions": int(result.preemptions.sum()),
        "events": result.events,
    }
