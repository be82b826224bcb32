"""A quoted job's reported steps as rows of the calibration dataset (runtime/data/verl_steps.csv):
what its `measured` record averages, and what `rlguard jobs export-steps` writes so an operator
can refit the step model to their own cluster with `rlguard runtime calibrate`.

Each row joins what ran (the job's `setup`) with what one step measured (its step report; the
setup's mean lengths where the step gives none). As in the shipped dataset, a job's first
reported step is left out: it warms up.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from rlguard.runtime.calib.calibrate import job_row
from rlguard.runtime.calib.measured import PHASES, SHIPPED, MeasuredStep
from rlguard.runtime.calib.quote import QuoteSetup


def step_rows(
    job_id: str, quote: dict[str, Any] | None, setup: dict[str, Any] | None, reports: list[dict]
) -> list[MeasuredStep]:
    """The rows of one job (none if it was not quoted or reported fewer than two steps)."""
    if not setup or not quote or quote.get("status") != "quoted":
        return []
    job = QuoteSetup.model_validate(setup)
    lengths = {
        "prompt_length_mean": job.prompt_length_mean,  # unless the step reports its own
        "response_length_mean": job.response_length_mean,
    }
    rows = []
    for report in sorted(reports, key=lambda r: r["step"])[1:]:
        step = report["step"]
        values = lengths | {k: v for k, v in report.items() if k != "step"}
        source = f"rlguard platform job {job_id} step {step}"
        rows.append(job_row(job, quote["rollout_tp"], job_id, step, source, values))
    return rows


def mean_phases(rows: list[MeasuredStep]) -> dict[str, float] | None:
    """Mean seconds per phase over the rows that time it (the quote's `step_s` keys)."""
    out = {}
    for phase in PHASES:
        times = [t for r in rows if (t := r.measured(phase)) is not None]
        if times:
            out[phase] = round(sum(times) / len(times), 3)
    totals = [r.step_s for r in rows if r.step_s is not None]
    if totals:
        out["total"] = round(sum(totals) / len(totals), 3)
    return out or None


def columns() -> list[str]:
    """The shipped dataset's header, so an export reads back as that file does."""
    return next(csv.reader(io.StringIO(SHIPPED.read_text("utf-8"))))


def write_csv(rows: Iterable[MeasuredStep]) -> str:
    header = columns()
    out = io.StringIO()
    writer = csv.DictWriter(out, header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        values = row.model_dump()
        writer.writerow({k: "" if values.get(k) is None else values[k] for k in header})
    return out.getvalue()
