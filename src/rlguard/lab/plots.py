"""The lab's plots: per method, gold and proxy against d = sqrt(KL), one line per seed, with the
points where each stop rule would have stopped marked."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from rlguard.io import atomic_path

MARKERS = {
    "evalstop": ("v", "EvalStop (k=3) stops"),
    "evalstop-k2": ("^", "EvalStop (k=2) stops"),
    "gao-trend": ("x", "GaoTrend stops"),
}


def plot_runs(records: list[dict[str, Any]], out: Path) -> list[Path]:
    by_method: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_method[record["method"]].append(record)
    return [_plot_method(method, runs, out / f"{method}.png") for method, runs in by_method.items()]


def _plot_method(method: str, runs: list[dict[str, Any]], path: Path) -> Path:
    fig, (gold_ax, proxy_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    seeds, stopped = [], set()
    for record in runs:
        curve = record["curve"]
        d = np.sqrt(curve["kl"])
        line = gold_ax.plot(d, curve["gold"], "-o", ms=3, label=f"seed {record['seed']}")[0]
        seeds.append(line)
        proxy_ax.plot(d, curve["proxy"], "-o", ms=3, color=line.get_color())
        for rule, step in record["stops"].items():
            if step is not None:
                i = curve["step"].index(step)
                marker = MARKERS[rule][0]
                gold_ax.plot(d[i], curve["gold"][i], marker, ms=11, mew=2, color=line.get_color())
                stopped.add(rule)
    # the rules' markers in grey after the seeds: a marker's colour is its run's
    rules = [
        Line2D([], [], marker=marker, ls="", ms=9, mew=2, color="0.35", label=label)
        for rule, (marker, label) in MARKERS.items()
        if rule in stopped
    ]
    gold_ax.set(
        xlabel="d = sqrt(KL) (nats^0.5)", ylabel="gold score (held-out)", title=f"{method}: gold"
    )
    proxy_ax.set(xlabel="d = sqrt(KL) (nats^0.5)", ylabel="proxy reward", title=f"{method}: proxy")
    for ax in (gold_ax, proxy_ax):
        ax.grid(alpha=0.3)
    gold_ax.legend(handles=seeds + rules, fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return path
