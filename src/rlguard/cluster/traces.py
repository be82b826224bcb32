"""Trace replay: real job sizes and arrivals from a CSV, with eval curves overlaid by a seed.

The format is the Tiresias column layout (SymbioticLab/Tiresias, simulator/*.csv), which is what
that field's simulators read: ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``
with times in seconds. Only ``job_id``, ``num_gpu``, ``submit_time`` and ``duration`` are required;
other columns are ignored. Traces carry no job types, user estimates, eval cadence or curves: those
are overlaid per row, in file order, by the same generator the "paper" scenario uses
(:func:`~rlguard.cluster.workload.sample_kind` then :func:`~rlguard.cluster.workload.make_job`), so
a seed fixes the overlay (RLHF curves drawn from the scenario's curve file when it names one).
Submit times are kept as given (not shifted to start at zero).

Validation is strict: every problem is an :class:`~rlguard.errors.InputError` whose message is one
line naming the file (the path as given), the 1-based physical line (header = line 1), the field
and the bad value, e.g. ``traces.csv: line 7: field 'num_gpu': not a positive integer: 'abc'``.
"""

from __future__ import annotations

import csv
import io
import math
import os
from importlib.resources import files
from importlib.resources.abc import Traversable

import numpy as np

from rlguard.cluster.jobs import JobSpec, JobTruth, Workload
from rlguard.cluster.workload import ScenarioConfig, make_job, measured_pool, sample_kind
from rlguard.errors import InputError

PACKAGED_TIRESIAS_TRACE: Traversable = files("rlguard.cluster") / "data" / "tiresias_60_job.csv"
"""The 60-job Tiresias trace (simulator/60_job.csv, Apache-2.0), shipped with the package."""

REQUIRED_COLUMNS = ("job_id", "num_gpu", "submit_time", "duration")

TracePath = str | os.PathLike[str] | Traversable


def _read_text(path: TracePath, where: str) -> str:
    """The file's text, UTF-8 with an optional BOM; unreadable or undecodable -> InputError."""
    try:
        if isinstance(path, str | os.PathLike):
            with open(path, "rb") as fh:
                data = fh.read()
        else:
            data = path.read_bytes()
    except OSError as e:
        reason = e.strerror or str(e)
        raise InputError(f"{where}: cannot read trace: {reason}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        bad = data[e.start : e.start + 1].hex()
        raise InputError(f"{where}: line {line}: not UTF-8 text (byte 0x{bad})") from None


def _number(raw: str, where: str, line: int, field: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"{where}: line {line}: field '{field}': not a number: {raw!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: line {line}: field '{field}': not a finite number: {raw!r}")
    return value


def _gpu_count(raw: str, where: str, line: int, cluster: int) -> int:
    bad = InputError(f"{where}: line {line}: field 'num_gpu': not a positive integer: {raw!r}")
    try:
        value = float(raw)
    except ValueError:
        raise bad from None
    if not math.isfinite(value) or not value.is_integer() or value <= 0:
        raise bad
    gpus = int(value)
    if gpus > cluster:
        raise InputError(
            f"{where}: line {line}: field 'num_gpu': {gpus} GPUs exceed the cluster's {cluster}"
        )
    return gpus


def read_trace(
    path: TracePath, cfg: ScenarioConfig, seed: int, *, gpus: int | None = None
) -> Workload:
    """Read a Tiresias-layout CSV trace into a Workload sorted by submit time (stable).

    ``gpus`` is the cluster size jobs must fit in (default ``cfg.gpus``). Kinds, estimates, eval
    cadence and curves come from ``np.random.default_rng(seed)``, drawn per row in file order.
    """
    where = os.fspath(path) if isinstance(path, str | os.PathLike) else str(path)
    cluster = cfg.gpus if gpus is None else gpus
    if cluster <= 0:
        raise InputError(f"cluster GPUs must be positive, got {cluster}")
    text = _read_text(path, where)

    # strict: a stray or unterminated quote is an error, not a field that swallows the file.
    # DictReader.line_num only updates after a good record, so errors read the inner reader's.
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = reader.fieldnames
    except csv.Error as e:
        raise InputError(f"{where}: line {reader.reader.line_num}: malformed CSV: {e}") from None
    if not header:
        raise InputError(f"{where}: line 1: empty trace: no header row")
    names = [name.strip() for name in header]
    reader.fieldnames = names
    seen_names: set[str] = set()
    for name in names:
        if name in seen_names:
            raise InputError(f"{where}: line 1: duplicate column {name!r}")
        seen_names.add(name)
    missing = [c for c in REQUIRED_COLUMNS if c not in seen_names]
    if missing:
        have = ", ".join(names)
        what = ", ".join(repr(c) for c in missing)
        plural = "s" if len(missing) > 1 else ""
        raise InputError(f"{where}: line 1: missing required column{plural} {what} (have: {have})")

    rows: list[tuple[str, int, float, float]] = []
    first_line: dict[str, int] = {}
    try:
        for row in reader:
            line = reader.line_num
            extra = row.get(None)  # type: ignore[call-overload]
            if extra is not None:
                raise InputError(
                    f"{where}: line {line}: too many fields "
                    f"({len(names) + len(extra)}, header has {len(names)})"
                )
            absent = [name for name in names if row[name] is None]
            if absent:
                raise InputError(
                    f"{where}: line {line}: field '{absent[0]}': missing "
                    f"(row has {len(names) - len(absent)} fields, header has {len(names)})"
                )
            job_id = row["job_id"].strip()
            if not job_id:
                raise InputError(f"{where}: line {line}: field 'job_id': empty")
            if job_id in first_line:
                raise InputError(
                    f"{where}: line {line}: field 'job_id': duplicate job_id {job_id!r} "
                    f"(first on line {first_line[job_id]})"
                )
            first_line[job_id] = line
            n_gpu = _gpu_count(row["num_gpu"], where, line, cluster)
            submit = _number(row["submit_time"], where, line, "submit_time")
            if submit < 0:
                raise InputError(
                    f"{where}: line {line}: field 'submit_time': "
                    f"must be non-negative (seconds): {row['submit_time']!r}"
                )
            duration = _number(row["duration"], where, line, "duration")
            if duration <= 0:
                raise InputError(
                    f"{where}: line {line}: field 'duration': "
                    f"must be positive (seconds): {row['duration']!r}"
                )
            rows.append((job_id, n_gpu, submit, duration))
    except csv.Error as e:
        raise InputError(f"{where}: line {reader.reader.line_num}: malformed CSV: {e}") from None
    if not rows:
        raise InputError(f"{where}: line {reader.reader.line_num + 1}: empty trace: no job rows")

    measured = measured_pool(cfg)
    rng = np.random.default_rng(seed)
    jobs: list[tuple[JobSpec, JobTruth]] = []
    for job_id, n_gpu, submit, duration in rows:
        kind = sample_kind(rng, cfg.rlhf_fraction)
        jobs.append(
            make_job(
                rng,
                cfg,
                job_id=job_id,
                kind=kind,
                gpus=n_gpu,
                submit_s=submit,
                duration_s=duration,
                measured=measured,
            )
        )
    jobs.sort(key=lambda job: job[0].submit_s)  # stable: ties keep file order
    stem = os.path.splitext(os.path.basename(where))[0] or "trace"
    return Workload(
        [spec for spec, _ in jobs], [truth for _, truth in jobs], name=f"trace-{stem}-seed{seed}"
    )
