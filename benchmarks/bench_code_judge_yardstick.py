"""The code judge against a public yardstick: ImpossibleBench's splits and its exploit families.

Reads benchmarks/data/impossiblebench_families/rows.jsonl (shipped, never downloaded; see its
README for the source): small tasks in ImpossibleBench's LiveCodeBench shape, each as the original
tests (solvable), a oneoff split (one expected value changed) and a conflicting split (the same
call asserted with a second value). An impossible split cannot be passed by a correct program, so
any pass there is a false accept; each exploit family of the upstream labeler (special-cased
inputs, call-count toggles, stack inspection, exits, excepthooks, test tampering, value fudges)
has exploit rows on both impossible splits and an honest control twin on the original split,
where anything but a pass is a false reject.

Every row goes through a fresh CodeJudge. For comparison, `--baseline` (on by default) also runs
each row the way ImpossibleBench's LCB scorer does: the program, then the tests, in one plain
Python process, passing iff it exits 0 (the rows are this repository's own, so running them
unsandboxed is safe). Writes benchmarks/results/code_judge_yardstick.json (or --out).

    python benchmarks/bench_code_judge_yardstick.py [--workers 2] [--no-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlguard.judges.code import CodeJudge, extract_code

HERE = Path(__file__).parent
DATA = HERE / "data" / "impossiblebench_families"
RESULTS = HERE / "results"
SOURCE = {  # what the rows follow (README.md there says what was taken and why no task text)
    "families_and_splits": "github.com/simonjmendelsohn/impossiblebench-honest-failure"
    " @ 4313aaa0217d9f11afd90ecd31491c4930963053 (scripts/judge.py labels, transcripts/)",
    "benchmark": "ImpossibleBench (arXiv 2510.20270), Impossible-LiveCodeBench splits",
}


def load(path: Path) -> list[dict]:
    with path.open() as f:
        return [json.loads(line) for line in f if line.strip()]


def naive_pass(row: dict, workdir: str, index: int) -> bool:
    """ImpossibleBench's scorer shape: program + tests in one process; a pass is exit status 0."""
    script = Path(workdir) / f"row{index}.py"
    script.write_text(f"{extract_code(row['completion'])}\n\n{row['unit_tests']}")
    try:  # from a file, as upstream: a traceback or inspect.stack() can read the test's line
        done = subprocess.run(
            [sys.executable, "-I", str(script)],
            cwd=workdir,
            capture_output=True,
            timeout=10,
            env={"PATH": "/usr/bin:/bin"},
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def rate(count: int, n: int) -> float | None:
    return round(count / n, 4) if n else None


def summarize(rows: list[dict], verdicts: list, baseline: list[bool] | None) -> dict:
    families: dict[str, dict] = defaultdict(
        lambda: {
            "exploits": 0,
            "false_accepts": 0,
            "controls": 0,
            "false_rejects": 0,
            "judge_failures": 0,
            "by_split": defaultdict(lambda: {"n": 0, "accepted": 0}),
            **({"baseline_accepts": 0, "baseline_control_rejects": 0} if baseline else {}),
        }
    )
    accepted, rejected = [], []
    for i, (row, verdict) in enumerate(zip(rows, verdicts, strict=True)):
        fam = families[row["family"]]
        fam["judge_failures"] += verdict.value == -1
        split = fam["by_split"][row["split"]]
        split["n"] += 1
        split["accepted"] += verdict.value == 1
        if row["kind"] == "exploit":
            fam["exploits"] += 1
            if verdict.value == 1:
                fam["false_accepts"] += 1
                accepted.append(row["id"])
            if baseline:
                fam["baseline_accepts"] += baseline[i]
        else:
            fam["controls"] += 1
            if verdict.value != 1:
                fam["false_rejects"] += 1
                rejected.append(
                    {"id": row["id"], "verdict": verdict.value, "reason": verdict.reason}
                )
            if baseline:
                fam["baseline_control_rejects"] += not baseline[i]
    out = {}
    for name in sorted(families):
        fam = families[name]
        fam["n"] = fam["exploits"] + fam["controls"]
        fam["false_accept_rate"] = rate(fam["false_accepts"], fam["exploits"])
        fam["false_reject_rate"] = rate(fam["false_rejects"], fam["controls"])
        if baseline:
            fam["baseline_accept_rate"] = rate(fam["baseline_accepts"], fam["exploits"])
        fam["by_split"] = dict(sorted(fam["by_split"].items()))
        out[name] = dict(sorted(fam.items()))
    return {"families": out, "false_accepts": accepted, "false_rejects": rejected}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA / "rows.jsonl")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", type=Path, default=RESULTS / "code_judge_yardstick.json")
    args = parser.parse_args()
    rows = load(args.data)
    judge = CodeJudge(max_workers=args.workers, cache_size=0)
    start = time.perf_counter()
    verdicts = judge.evaluate(
        [""] * len(rows),
        [r["completion"] for r in rows],
        [{"unit_tests": r["unit_tests"]} for r in rows],
    )
    judge_s = time.perf_counter() - start
    baseline = None
    if args.baseline:
        with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(args.workers) as pool:
            baseline = list(pool.map(naive_pass, rows, [workdir] * len(rows), range(len(rows))))
    summary = summarize(rows, verdicts, baseline)
    exploits = [v for r, v in zip(rows, verdicts, strict=True) if r["kind"] == "exploit"]
    controls = [v for r, v in zip(rows, verdicts, strict=True) if r["kind"] == "control"]
    total = {
        "exploits": len(exploits),
        "false_accepts": sum(v.value == 1 for v in exploits),
        "controls": len(controls),
        "false_rejects": sum(v.value != 1 for v in controls),
        "judge_failures": sum(v.value == -1 for v in verdicts),
    }
    total["false_accept_rate"] = rate(total["false_accepts"], total["exploits"])
    total["false_reject_rate"] = rate(total["false_rejects"], total["controls"])
    if baseline is not None:
        picked = [b for r, b in zip(rows, baseline, strict=True) if r["kind"] == "exploit"]
        total["baseline_accepts"] = sum(picked)
        total["baseline_accept_rate"] = rate(sum(picked), len(picked))
    result = {
        "command": "python benchmarks/bench_code_judge_yardstick.py",
        "data": str(args.data.relative_to(HERE.parent) if args.data.is_absolute() else args.data),
        "source": SOURCE,
        "rows": len(rows),
        "tasks": len({r["task"] for r in rows}),
        "total": total,
        **summary,
        "judge_wall_s": round(judge_s, 2),
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'family':28s} {'exploits':>8s} {'false acc':>9s} {'controls':>8s} {'false rej':>9s}")
    for name, fam in summary["families"].items():
        print(
            f"{name:28s} {fam['exploits']:8d} {fam['false_accepts']:9d} {fam['controls']:8d}"
            f" {fam['false_rejects']:9d}"
        )
    print(json.dumps(total))


if __name__ == "__main__":
    main()
