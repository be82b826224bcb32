"""The lab's markdown report: per-method means, where each stop rule stopped, and per-run rows."""

from __future__ import annotations

from typing import Any

from rlguard.lab.analysis import HEADLINE, summarize_run
from rlguard.lab.analysis import MEANED as COLUMNS


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]


def render(result: dict[str, Any], records: list[dict[str, Any]]) -> str:
    budget = result["config"]["budget"]
    lines = [
        "# rlguard lab: reward overoptimization",
        "",
        f"Budget per run: {budget['steps']} steps, {budget['prompts_per_task']} prompts x "
        f"{budget['k']} samples per task per step, learning rate {budget['learning_rate']}; "
        f"seeds: {result['config']['seeds']}. Gold and satisfaction: held-out prompts.",
        "",
        "## Methods (means over seeds)",
        "",
        *_table(
            ["method", *COLUMNS, "seeds_hacked", "seeds_turned_over", "seeds"],
            [
                [m, *(v[c] for c in COLUMNS), v["seeds_hacked"], v["seeds_turned_over"], v["seeds"]]
                for m, v in result["methods"].items()
            ],
        ),
        "",
        "Gao's form fitted to each method's seed-mean curve (gold and KL averaged per eval):",
        "",
        *_table(
            ["method", "alpha", "beta", "R^2"],
            [
                [m, v["gao_alpha_mean_curve"], v["gao_beta_mean_curve"], v["gao_r2_mean_curve"]]
                for m, v in result["methods"].items()
            ],
        ),
        "",
        "## Stop rules (watching online, not stopping)",
        "",
        *_table(
            [
                "rule",
                "method",
                "stopped_seeds",
                "kept_gold_vs_peak",
                "worst kept",
                "hacking runs missed",
                "stopped, not hacking",
                "stop steps",
            ],
            [
                [
                    rule,
                    m,
                    s["stopped_seeds"],
                    s["kept_gold_vs_peak"],
                    s["kept_gold_vs_peak_min"],
                    s["missed_hacked"],
                    s["stopped_not_hacked"],
                    str(s["stop_steps"]),
                ]
                for rule, per_method in result["stops"].items()
                for m, s in per_method.items()
            ],
        ),
        "",
        "## Runs",
        "",
    ]
    rows = []
    for record in records:
        s = summarize_run(record)
        stops = str({r: v["step"] for r, v in s["stops"].items()})
        headline = [s[c] for c in HEADLINE]
        rows.append([record["method"], record["seed"], *headline, s["hacked"], stops])
    header = ["method", "seed", *HEADLINE, "hacked", "stops"]
    return "\n".join(lines + _table(header, rows)) + "\n"
