"""Cross-check rlguard's schedulers against the Tiresias simulator, job for job.

    python benchmarks/crosscheck_tiresias.py PATH/TO/Tiresias [--python python2.7]

PATH/TO/Tiresias is a checkout of SymbioticLab/Tiresias that you fetched (nothing of it ships
with rlguard); its `simulator/` is run from a temporary copy (benchmarks/tiresias_reference.py
says how, and how Python 3 runs it when no Python 2.7 is found). Both simulators replay the same
traces on 8, 16, 32 and 64 GPUs (nodes of 8):
- Tiresias' own 60-job trace (its simulator/60_job.csv);
- a demotion-heavy trace: Philly-like jobs from rlguard's workload generator (GPUs 1/2/4/8,
  durations of 30 min to a week, Poisson arrivals), written in the Tiresias CSV layout and drawn
  from a fixed seed, so that many jobs pass the 3250 and 7200 GPU-second thresholds.

Pairs: rlguard `fifo` vs Tiresias `fjf`, `fifo-strict` vs `fifo`, `tiresias` vs `dlas-gpu` and
`tiresias` with promote_knob=8 vs `dlas-gpu-8`. rlguard runs in reference mode: no restore cost,
event-driven passes (tick_s=None), and GPUs counted without node placement, as the simulator
does with its `count` scheme (its dlas loop counts GPUs whatever the scheme). The 2D-LAS pairs
are also run against the simulator with its demotion wake-up bug fixed, and with that fix and
thresholds every GPU count divides (3200/7200), to show what each difference is due to. Every
row also gives rlguard's own defaults (300 s rounds, 60 s restores, 8-GPU nodes) for contrast.

Writes benchmarks/results/tiresias_crosscheck.json (per-job JCTs of both) and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tiresias_reference as ref

from rlguard.cluster.engine import Engine
from rlguard.cluster.registry import build_policy
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.traces import PACKAGED_TIRESIAS_TRACE, read_trace
from rlguard.cluster.workload import philly_sizes
from rlguard.io import write_text

GPUS = (8, 16, 32, 64)
OUT = Path(__file__).parent / "results" / "tiresias_crosscheck.json"
DEMOTION_TRACE = {"seed": 0, "jobs": 100, "load_at_gpus": 16, "load": 1.0}
WHOLE_SECOND_LIMITS = (3200, 7200, 18000)  # 3200 = 400 x 8: GPU counts 1, 2, 4, 8 divide it


@dataclass(frozen=True)
class Variant:
    """How the reference simulator is patched (see tiresias_reference.py)."""

    name: str
    fix_jump: bool = False
    queue_limits: tuple[int, int, int] | None = None


AS_IS = Variant("as-is")
FIXED = Variant("jump fixed", fix_jump=True)
WHOLE_SECONDS = Variant("jump fixed, limits 3200/7200", True, WHOLE_SECOND_LIMITS)


@dataclass(frozen=True)
class Pair:
    """An rlguard policy (with its reference-mode knobs) against a Tiresias schedule."""

    ours: str
    schedule: str
    variant: Variant = AS_IS
    knobs: dict[str, Any] = field(default_factory=dict)

    @property
    def reference_knobs(self) -> dict[str, Any]:
        event_driven = {"tick_s": None} if self.ours == "tiresias" else {}
        limits = self.variant.queue_limits
        return {**self.knobs, **event_driven, **({"thresholds": limits[:2]} if limits else {})}


def pairs() -> list[Pair]:
    out = [Pair("fifo", "fjf"), Pair("fifo-strict", "fifo")]
    for schedule, knobs in (("dlas-gpu", {}), ("dlas-gpu-8", {"promote_knob": 8})):
        out += [Pair("tiresias", schedule, v, knobs) for v in (AS_IS, FIXED, WHOLE_SECONDS)]
    return out


def demotion_trace(path: Path) -> None:
    """Philly-like jobs (rlguard's generator), whole seconds, Tiresias CSV layout, fixed seed."""
    rng = np.random.default_rng(DEMOTION_TRACE["seed"])
    gpus, duration = philly_sizes(rng, DEMOTION_TRACE["jobs"])
    duration = np.round(duration).astype(int)
    rate = DEMOTION_TRACE["load"] * DEMOTION_TRACE["load_at_gpus"] / float(np.mean(gpus * duration))
    submit = np.round(np.cumsum(rng.exponential(1.0 / rate, len(gpus)))).astype(int)
    submit -= submit[0]
    gaps = np.append(np.diff(submit), 0)
    lines = ["job_id,num_gpu,submit_time,iterations,model_name,duration,interval"]
    lines += [
        f"{i},{g},{s},{d},resnet50,{d},{gap}"
        for i, (g, s, d, gap) in enumerate(zip(gpus, submit, duration, gaps, strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")


def run_ours(
    trace: Path, gpus: int, pair: Pair, reference: bool, counted: bool
) -> tuple[dict[str, float], int]:
    """Per-job JCTs and total preemptions of rlguard on a trace (no stop rule). `counted`: GPUs
    in one pool (the simulator's count scheme), else on nodes of 8."""
    workload = read_trace(trace, ScenarioConfig(gpus=gpus), seed=0, gpus=gpus)
    knobs = pair.reference_knobs if reference else pair.knobs
    engine = Engine(
        workload,
        Scheduler(build_policy(pair.ours, knobs)),
        gpus=gpus,
        node_gpus=gpus if counted else 8,
        restore_s=0.0 if reference else 60.0,
    )
    result = engine.run()
    jct = {s.job_id: float(result.finish_s[i] - s.submit_s) for i, s in enumerate(workload.specs)}
    return jct, int(result.preemptions.sum())


def equal(a: float, b: float) -> bool:
    """Equal up to float rounding: the simulator keeps whole seconds, rlguard floats."""
    return abs(a - b) <= 1e-6 + 1e-9 * abs(b)


def compare(trace: Path, name: str, gpus: int, pair: Pair, theirs: ref.RefRun, scheme: str) -> dict:
    ours, preempted = run_ours(trace, gpus, pair, reference=True, counted=scheme == "count")
    default, _ = run_ours(trace, gpus, pair, reference=False, counted=False)
    if set(ours) != set(theirs.jct_s):
        raise SystemExit(f"error: {name}: the simulators finished different jobs")
    jobs = sorted(theirs.jct_s, key=int)
    mean_ours = statistics.fmean(ours[j] for j in jobs)
    mean_theirs = statistics.fmean(theirs.jct_s[j] for j in jobs)
    return {
        "trace": name,
        "gpus": gpus,
        "ours": {"policy": pair.ours, "policy_args": pair.reference_knobs},
        "theirs": {"schedule": pair.schedule, "variant": pair.variant.name},
        "mean_jct_s": {"ours": mean_ours, "theirs": mean_theirs},
        "diff_pct": 100.0 * (mean_ours / mean_theirs - 1.0),
        "jobs": len(jobs),
        "jobs_equal": sum(equal(ours[j], theirs.jct_s[j]) for j in jobs),
        "max_abs_diff_s": max(abs(ours[j] - theirs.jct_s[j]) for j in jobs),
        "preemptions": {"ours": preempted, "theirs": theirs.preemptions},
        "demotions_theirs": theirs.demotions,
        "ours_default_mean_jct_s": statistics.fmean(default[j] for j in jobs),
        # per job, in the order of the trace's job_ids; rlguard's floats to the microsecond
        "jct_s": {
            "ours": [round(ours[j], 6) for j in jobs],
            "theirs": [int(theirs.jct_s[j]) for j in jobs],
        },
    }


def dumps(payload: dict) -> str:
    """JSON with one line per top-level key and per row (rows hold long per-job lists)."""
    head = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in payload.items() if k != "rows"]
    rows = ",\n".join(f"    {json.dumps(row)}" for row in payload["rows"])
    return "{\n" + ",\n".join(head) + f',\n  "rows": [\n{rows}\n  ]\n}}\n'


def table(rows: list[dict]) -> str:
    head = (
        "| trace | GPUs | Tiresias | rlguard | Tiresias mean JCT (s) | rlguard mean JCT (s) "
        "| diff | jobs equal | preemptions T / r | demotions T | rlguard defaults (s) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        knobs = ", ".join(f"{k}={v}" for k, v in r["ours"]["policy_args"].items())
        lines.append(
            f"| {r['trace']} | {r['gpus']} | {r['theirs']['schedule']} ({r['theirs']['variant']}) "
            f"| {r['ours']['policy']} {knobs} | {r['mean_jct_s']['theirs']:.1f} "
            f"| {r['mean_jct_s']['ours']:.1f} | {r['diff_pct']:+.2f}% "
            f"| {r['jobs_equal']}/{r['jobs']} | {r['preemptions']['theirs']} / "
            f"{r['preemptions']['ours']} | {r['demotions_theirs']} "
            f"| {r['ours_default_mean_jct_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of SymbioticLab/Tiresias")
    parser.add_argument("--python", help="interpreter for the simulator (default: a 2.7, else 3)")
    parser.add_argument(
        "--scheme",
        choices=("count", "yarn"),
        default="count",
        help="the simulator's placement; with yarn (first fit on nodes) rlguard places on nodes "
        "of 8 (best fit) instead of counting GPUs",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    interpreter = ref.find_interpreter(args.python)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        own = args.checkout / "simulator" / "60_job.csv"
        demotion = work / "philly_demotion.csv"
        demotion_trace(demotion)
        traces = {"tiresias_60_job": own, "philly_demotion": demotion}
        copies = {
            v: ref.prepare(args.checkout, work, interpreter, v.fix_jump, v.queue_limits)
            for v in (AS_IS, FIXED, WHOLE_SECONDS)
        }
        rows = []
        for name, trace in traces.items():
            for pair in pairs():
                for gpus in GPUS:
                    copy = copies[pair.variant]
                    theirs = ref.run(copy, interpreter, trace, pair.schedule, gpus, 8, args.scheme)
                    rows.append(compare(trace, name, gpus, pair, theirs, args.scheme))
        trace_info = {
            name: {
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "job_ids": sorted(
                    (s.job_id for s in read_trace(path, ScenarioConfig(), 0).specs), key=int
                ),
            }
            for name, path in traces.items()
        }
    trace_info["tiresias_60_job"]["same_as_packaged"] = (
        own.read_bytes() == PACKAGED_TIRESIAS_TRACE.read_bytes()
    )
    trace_info["philly_demotion"].update(DEMOTION_TRACE)
    payload = {
        "reference": {
            "checkout": str(args.checkout),
            "commit": _commit(args.checkout),
            "interpreter": interpreter.path,
            "python": interpreter.major,
            "python3_shim": interpreter.major == 3,
            "scheme": args.scheme,
        },
        "ours": {
            "reference_mode": "restore_s 0, tick_s None (event-driven), GPUs counted in one pool "
            "(with --scheme yarn: on nodes of 8)",
            "ours_default_mean_jct_s": "the policy's knobs (promote_knob) with rlguard's defaults: "
            "thresholds 3250/7200, rounds of 300 s, restore_s 60, 8-GPU nodes (best fit)",
        },
        "traces": trace_info,
        "rows": rows,
    }
    write_text(args.out, dumps(payload))
    print(table(rows))


def _commit(checkout: Path) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() if done.returncode == 0 else None


if __name__ == "__main__":
    main()
