"""Sweeps: one scenario knob (or the base scheduler, or EvalStop's k) over a list of values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rlguard.cluster.experiments.simulate import Grid, aggregate, run_grids, with_scenario
from rlguard.cluster.registry import BASES
from rlguard.errors import InputError

SCENARIO_SWEEPS = {"noise": "noise", "hacking": "hacking_fraction", "rlhf": "rlhf_fraction"}
DEFAULT_VALUES: dict[str, list] = {
    "noise": [0.0, 0.01, 0.02, 0.05, 0.1],
    "hacking": [0.2, 0.35, 0.5, 0.65, 0.8],
    "rlhf": [0.2, 0.4, 0.6, 0.8, 1.0],
    "base": list(BASES),
    "k": [1, 2, 3, 4, 5, 6],
}
SWEEPS = tuple(DEFAULT_VALUES)


def parse_values(kind: str, raw: str | None) -> list:
    """Sweep values from a comma list (or the defaults), typed for the sweep."""
    if raw is None:
        return DEFAULT_VALUES[kind]
    items = [v.strip() for v in raw.split(",") if v.strip()]
    if kind == "base":
        unknown = [v for v in items if v not in BASES]
        if unknown:
            raise InputError(f"option --values: unknown base scheduler {unknown[0]!r}")
        return items
    cast = int if kind == "k" else float
    try:
        return [cast(v) for v in items]
    except ValueError:
        raise InputError(f"option --values: not a list of {cast.__name__}s: {raw!r}") from None


def grid_at(grid: Grid, kind: str, value) -> Grid:  # type: ignore[no-untyped-def]
    if kind in SCENARIO_SWEEPS:
        return with_scenario(grid, **{SCENARIO_SWEEPS[kind]: value})
    if kind == "base":
        return replace(grid, bases=[value])
    return replace(grid, params=grid.params.model_copy(update={"k": value}))


def sweep(grid: Grid, kind: str, values: Sequence, **fan_out_args) -> list[dict]:
    """One row per (value, rule(base)), with the same keys as `rlguard simulate` results."""
    grids = [grid_at(grid, kind, v) for v in values]
    rows = []
    for value, runs in zip(values, run_grids(grids, **fan_out_args), strict=True):
        for name, entry in aggregate(runs).items():
            rows.append({"sweep": kind, "value": value, "key": name, **entry})
    for row in rows:
        row["rule"], row["base"] = row["key"].rstrip(")").split("(", 1)
    return rows
