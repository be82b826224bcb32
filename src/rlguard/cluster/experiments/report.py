"""A markdown report of a simulation: the results table and, for EvalStop, the paper beside us."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# EvalStop abstract (arXiv 2606.04145), 80% RLHF on 64 GPUs, EvalStop over SRTF-Est.
PAPER_EVALSTOP_SRTF = {
    "precision": 0.98,
    "recall": 0.99,
    "fpr": 0.015,
    "jct_gain": 0.09,
    "waste_cut": 0.22,
}

COLUMNS = (
    ("precision", "precision", "pct"),
    ("recall", "recall", "pct"),
    ("fpr", "FPR", "pct"),
    ("jct_mean_h", "JCT mean (h)", "num"),
    ("jct_p95_h", "JCT p95 (h)", "num"),
    ("jct_gain", "JCT gain", "pct"),
    ("p_jct", "p (JCT)", "p"),
    ("waste_gpu_h", "waste (GPU-h)", "num"),
    ("waste_cut", "waste cut", "pct"),
    ("p_waste", "p (waste)", "p"),
    ("quality_regret", "quality regret", "num3"),
    ("gpu_util", "GPU util", "pct"),
)


def fmt(value: Any, style: str) -> str:
    if value is None:
        return "–"
    if style == "pct":
        return f"{100 * value:.1f}%"
    if style == "p":
        return f"{value:.2g}"
    if style == "num3":
        return f"{value:.3f}"
    return f"{value:.1f}"


def results_table(results: Mapping[str, Mapping[str, Any]]) -> str:
    header = "| rule(base) | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    rule = "|---" * (len(COLUMNS) + 1) + "|"
    lines = [header, rule]
    for name, entry in results.items():
        cells = " | ".join(fmt(entry.get(k), style) for k, _, style in COLUMNS)
        lines.append(f"| {name} | {cells} |")
    return "\n".join(lines)


def paper_table(entry: Mapping[str, Any]) -> str:
    lines = ["| metric | paper (EvalStop over SRTF-Est) | rlguard |", "|---|---|---|"]
    for k, paper in PAPER_EVALSTOP_SRTF.items():
        bound = "<=" if k == "fpr" else ">="
        lines.append(f"| {k} | {bound} {fmt(paper, 'pct')} | {fmt(entry.get(k), 'pct')} |")
    return "\n".join(lines)


def render(config: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]]) -> str:
    parts = [
        "# rlguard simulate: report",
        "",
        "Configuration: " + ", ".join(f"{k}={v}" for k, v in config.items()),
        "",
        "Means over seeds. Gains are paired per seed against none(<same base>); p-values from a "
        "paired t-test over seeds. Detection is scored over RLHF jobs (positive = stopped).",
        "",
        results_table(results),
    ]
    if "evalstop(srtf-est)" in results:
        parts += ["", "## Beside the paper", "", paper_table(results["evalstop(srtf-est)"])]
    parts += [
        "",
        "Plots: jct_cdf.png (JCT CDF per rule), eval_curves_<rule>.png (stopped vs completed "
        "RLHF runs, stop point marked).",
        "",
    ]
    return "\n".join(parts)
