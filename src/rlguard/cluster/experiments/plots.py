"""PNG plots of a simulation: JCT CDFs, eval curves with stop points, detection vs noise."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def jct_cdf(rows: list[dict], path: Path) -> None:
    """One empirical CDF of job completion time per rule(base), pooled over seeds."""
    pooled: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        pooled[f"{row['rule']}({row['base']})"].extend(row["jct_h"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, values in sorted(pooled.items()):
        x = np.sort(values)
        ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (hours, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("JCT CDF per stop rule")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def eval_curves(curves: list[dict], rule: str, path: Path) -> None:
    """Observed eval curves of RLHF jobs, stopped vs completed, with the stop point marked."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, stopped in zip(axes, (True, False), strict=True):
        shown = [c for c in curves if c["stopped"] == stopped][:12]
        for c in shown:
            seen = len(c["observed"])
            color = "tab:red" if c["hacking"] else "tab:blue"
            ax.plot(c["progress"], c["true"], color=color, alpha=0.25, lw=1)
            ax.plot(c["progress"][:seen], c["observed"], color=color, alpha=0.8, lw=1.2)
            if stopped:
                ax.plot(c["progress"][seen - 1], c["observed"][-1], "kx", ms=7)
            d = c["delivered"]
            ax.plot(c["progress"][d], c["observed"][d], "o", color=color, ms=4)
        verdict = "stopped (x = stop, o = delivered checkpoint)" if stopped else "completed"
        ax.set_title(f"{rule}: {verdict}", fontsize=9)
        ax.set_xlabel("training progress")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("eval score (red: hacking, blue: healthy; faint: truth)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def detection_vs_noise(rows: list[dict], path: Path) -> None:
    """Precision and recall of each stop rule as eval noise grows (rows of a noise sweep)."""
    series: dict[str, list[tuple[float, float | None, float | None]]] = defaultdict(list)
    for row in rows:
        if row["rule"] != "none":
            series[row["key"]].append((row["value"], row["precision"], row["recall"]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for name, points in sorted(series.items()):
        points.sort()
        x = [p[0] for p in points]
        for ax, idx in zip(axes, (1, 2), strict=True):
            y = [np.nan if p[idx] is None else p[idx] for p in points]
            ax.plot(x, y, marker="o", label=name)
    for ax, title in zip(axes, ("precision", "recall"), strict=True):
        ax.set_xlabel("eval noise std")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
