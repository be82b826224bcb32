"""Per run of a curve file: which stop rules stop it, and at which eval.

Why: `rlguard simulate --curves` scores rules on jobs that draw from the file, averaged; this
says, run by run, what each rule decides. Two readings of every curve:

- as measured: each point is one eval event, in order, as the lab's online watchers see them
  (the eval at progress 0 and the last one included);
- at the simulator's cadences: a job with n evals (n = 10..16, the paper scenario's range) is
  evaluated at progress i / n on the curve interpolated as the simulator does, and shown every
  eval but the last; the cell counts the cadences at which the rule stops the run.

Rules are the registry's, with their defaults (plus EvalStop at other k with --k).

    python benchmarks/replay_curves.py runs/lab/curves.json --k 2 --out results.json
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from rlguard.cluster.curve_file import read_curves
from rlguard.cluster.curves import MeasuredCurve
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.registry import RULES, RuleParams
from rlguard.io import write_json

DEFAULT_RULES = ("evalstop", "gao-trend", "gao-drop")
CADENCES = range(10, 17)


def first_stop(
    rule_name: str, params: RuleParams, points: Iterable[tuple[float, float]]
) -> dict | None:
    """The first eval the rule stops at (index, progress, reason), or None."""
    rule = RULES[rule_name](params)
    for i, (p, s) in enumerate(points):
        decision = rule.observe(EvalEvent("run", "rlhf", i, float(p), float(s), float("nan")))
        if decision.stop:
            return {"eval": i, "progress": float(p), "reason": decision.reason}
    return None


def at_cadence(curve: MeasuredCurve, n: int) -> list[tuple[float, float]]:
    """The evals a simulated job with n evals shows its rule: progress i / n, all but the last."""
    progress = np.arange(1, n) / n
    return list(zip(progress, curve(progress), strict=True))


def table(variants: list[str], runs: list[dict], cell) -> str:  # type: ignore[no-untyped-def]
    lines = ["| run | hacking | " + " | ".join(variants) + " |", "|---" * (len(variants) + 2) + "|"]
    for run in runs:
        cells = " | ".join(cell(run, v) for v in variants)
        lines.append(f"| {run['name']} | {'yes' if run['hacking'] else 'no'} | {cells} |")
    return "\n".join(lines)


def measured_cell(run: dict, variant: str) -> str:
    stop = run["measured"][variant]
    return "-" if stop is None else f"eval {stop['eval']} (p {stop['progress']:.2f})"


def cadence_cell(run: dict, variant: str) -> str:
    stops = run["cadences"][variant]
    return f"{sum(s is not None for s in stops.values())} / {len(stops)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curves", type=Path)
    parser.add_argument("--rules", default=",".join(DEFAULT_RULES))
    parser.add_argument("--k", type=int, action="append", help="EvalStop k (repeatable)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    variants = {name: (name, RuleParams()) for name in args.rules.split(",")}
    for k in args.k or []:  # EvalStop at another k, e.g. the lab's k = 2
        variants[f"evalstop-k{k}"] = ("evalstop", RuleParams(k=k))
    read = read_curves(args.curves)
    runs = []
    for curve in read.curves:
        measured = list(zip(curve.progress, curve.score, strict=True))
        runs.append(
            {
                "name": curve.name,
                "method": curve.method,
                "hacking": curve.hacks,
                "measured": {v: first_stop(*variants[v], measured) for v in variants},
                "cadences": {
                    v: {n: first_stop(*variants[v], at_cadence(curve, n)) for n in CADENCES}
                    for v in variants
                },
            }
        )
    names = list(variants)
    print("As measured (every point an eval):\n")
    print(table(names, runs, measured_cell))
    print(f"\nAt the simulator's cadences ({CADENCES.start}-{CADENCES.stop - 1} evals): stopped\n")
    print(table(names, runs, cadence_cell))
    if args.out:
        write_json(args.out, {"curves": str(args.curves), "source": read.source, "runs": runs})


if __name__ == "__main__":
    main()
