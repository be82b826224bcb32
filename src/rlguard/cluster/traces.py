"""Trace replay: real job sizes and arrivals from a CSV, with eval curves overlaid by a seed.

The format is the Tiresias column layout (SymbioticLab/Tiresias, simulator/*.csv), which is what
that field's simulators read: ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``
with times in seconds. Only ``job_id``, ``num_gpu``, ``submit_time`` and ``duration`` are required;
other columns are ignored. Traces carry no job types, user estimates, eval cadence or curves: those
are overlaid per row, in file order, by the same draws the "paper" scenario uses
(rlguard.cluster.overlay), so a seed fixes the overlay (RLHF curves drawn from the scenario's
curve file when it names one). Submit times are kept as given (not shifted to start at zero).
`read_trace` returns a materialized Workload; `trace_stream` the same jobs as a stream of column
blocks, for traces of a million jobs.

Validation is strict: every problem is an :class:`~rlguard.errors.InputError` whose message is one
line naming the file (the path as given), the 1-based physical line (header = line 1), the field
and the bad value, e.g. ``traces.csv: line 7: field 'num_gpu': not a positive integer: 'abc'``.
"""

from __future__ import annotations

import csv
import io
import math
import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable

import numpy as np

from rlguard.cluster import overlay
from rlguard.cluster.blocks import JobBlock, JobStream, split, submission_order
from rlguard.cluster.jobs import Workload
from rlguard.cluster.scenario import MeasuredPool, ScenarioConfig, measured_pool
from rlguard.errors import InputError

PACKAGED_TIRESIAS_TRACE: Traversable = files("rlguard.cluster") / "data" / "tiresias_60_job.csv"
"""The 60-job Tiresias trace (simulator/60_job.csv, Apache-2.0), shipped with the package."""

REQUIRED_COLUMNS = ("job_id", "num_gpu", "submit_time", "duration")

TracePath = str | os.PathLike[str] | Traversable


def _open(path: TracePath, where: str) -> io.BufferedIOBase:
    try:
        if isinstance(path, str | os.PathLike):
            return open(path, "rb")
        return path.open("rb")
    except OSError as e:
        raise InputError(f"{where}: cannot read trace: {e.strerror or e}") from None


def _check_utf8(path: TracePath, where: str) -> None:
    """Fail on the file's first byte that is not UTF-8 (a BOM is fine), naming its line."""
    with _open(path, where) as fh:
        data = fh.read()
    try:
        data.decode("utf-8-sig")
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


@dataclass(frozen=True)
class TraceColumns:
    """A trace's job rows, in file order: what the trace says of each job."""

    where: str
    job_ids: list[str]
    gpus: np.ndarray
    submit_s: np.ndarray
    duration_s: np.ndarray


def read_columns(path: TracePath, cluster: int, *, chunk_rows: int = 65536) -> TraceColumns:
    """Read and check a trace's rows, `chunk_rows` at a time: the text is never held whole and
    rows become numpy columns a chunk at a time (only job ids stay Python strings).

    A byte that is not UTF-8 anywhere in the file is reported before any other problem, as it
    would be by a reader that decodes the whole file first.
    """
    where = os.fspath(path) if isinstance(path, str | os.PathLike) else str(path)
    if cluster <= 0:
        raise InputError(f"cluster GPUs must be positive, got {cluster}")
    with _open(path, where) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        try:
            return _parse(csv.reader(text, strict=True), where, cluster, chunk_rows)
        except UnicodeDecodeError:
            _check_utf8(path, where)
            raise
        except InputError:
            _check_utf8(path, where)
            raise
        except OSError as e:
            raise InputError(f"{where}: cannot read trace: {e.strerror or e}") from None


def _header(reader: Iterator[list[str]], where: str) -> list[str]:
    """The column names (stripped), checked: present, unique, the required ones there."""
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise InputError(f"{where}: line {reader.line_num}: malformed CSV: {e}") from None
    if not header:
        raise InputError(f"{where}: line 1: empty trace: no header row")
    names = [name.strip() for name in header]
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
    return names


def _parse(reader: Iterator[list[str]], where: str, cluster: int, chunk_rows: int) -> TraceColumns:
    names = _header(reader, where)
    width = len(names)
    at_id, at_gpu, at_submit, at_duration = (names.index(c) for c in REQUIRED_COLUMNS)
    job_ids: list[str] = []
    lines = array("q")
    known: set[str] = set()
    chunk: list[tuple[int, float, float]] = []
    parts: list[np.ndarray] = []
    line = None  # a row's reported line: after blank lines, the first of them (as csv.DictReader)
    try:
        for row in reader:
            if line is None:
                line = reader.line_num
            if not row:
                continue
            if len(row) > width:
                raise InputError(
                    f"{where}: line {line}: too many fields ({len(row)}, header has {width})"
                )
            if len(row) < width:
                raise InputError(
                    f"{where}: line {line}: field '{names[len(row)]}': missing "
                    f"(row has {len(row)} fields, header has {width})"
                )
            job_id = row[at_id].strip()
            if not job_id:
                raise InputError(f"{where}: line {line}: field 'job_id': empty")
            if job_id in known:
                first = lines[job_ids.index(job_id)]
                raise InputError(
                    f"{where}: line {line}: field 'job_id': duplicate job_id {job_id!r} "
                    f"(first on line {first})"
                )
            known.add(job_id)
            n_gpu = _gpu_count(row[at_gpu], where, line, cluster)
            submit = _number(row[at_submit], where, line, "submit_time")
            if submit < 0:
                raise InputError(
                    f"{where}: line {line}: field 'submit_time': "
                    f"must be non-negative (seconds): {row[at_submit]!r}"
                )
            duration = _number(row[at_duration], where, line, "duration")
            if duration <= 0:
                raise InputError(
                    f"{where}: line {line}: field 'duration': "
                    f"must be positive (seconds): {row[at_duration]!r}"
                )
            job_ids.append(job_id)
            lines.append(line)
            chunk.append((n_gpu, submit, duration))
            if len(chunk) == chunk_rows:
                parts.append(np.array(chunk, dtype=float))
                chunk.clear()
            line = None
    except csv.Error as e:
        raise InputError(f"{where}: line {reader.line_num}: malformed CSV: {e}") from None
    if not job_ids:
        raise InputError(f"{where}: line {reader.line_num + 1}: empty trace: no job rows")
    columns = np.concatenate([*parts, np.array(chunk, dtype=float).reshape(-1, 3)])
    return TraceColumns(
        where, job_ids, columns[:, 0].astype(np.int64), columns[:, 1], columns[:, 2]
    )


def _overlays(
    trace: TraceColumns, cfg: ScenarioConfig, seed: int, pool: MeasuredPool | None, block: int
) -> Iterator[tuple[overlay.Overlay, dict]]:
    """The trace's jobs a block at a time, in file order, each with its overlay drawn per row."""
    rng = np.random.default_rng(seed)
    n = len(trace.job_ids)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        columns = {
            "job_ids": trace.job_ids[lo:hi],
            "gpus": trace.gpus[lo:hi],
            "submit_s": trace.submit_s[lo:hi],
            "duration_s": trace.duration_s[lo:hi],
        }
        yield overlay.draw(rng, cfg, hi - lo, pool), columns


def _name(trace: TraceColumns, seed: int) -> str:
    stem = os.path.splitext(os.path.basename(trace.where))[0] or "trace"
    return f"trace-{stem}-seed{seed}"


def read_trace(
    path: TracePath, cfg: ScenarioConfig, seed: int, *, gpus: int | None = None
) -> Workload:
    """Read a Tiresias-layout CSV trace into a Workload sorted by submit time (stable).

    ``gpus`` is the cluster size jobs must fit in (default ``cfg.gpus``). Kinds, estimates, eval
    cadence and curves come from ``np.random.default_rng(seed)``, drawn per row in file order.
    """
    trace = read_columns(path, cfg.gpus if gpus is None else gpus)
    pool = measured_pool(cfg)
    jobs = [
        job
        for ov, columns in _overlays(trace, cfg, seed, pool, block=4096)
        for job in overlay.jobs(ov, cfg, pool, **columns)
    ]
    jobs.sort(key=lambda job: job[0].submit_s)  # stable: ties keep file order
    return Workload(
        [spec for spec, _ in jobs], [truth for _, truth in jobs], name=_name(trace, seed)
    )


def trace_stream(
    path: TracePath,
    cfg: ScenarioConfig,
    seed: int,
    *,
    gpus: int | None = None,
    block: int = 4096,
    chunk_rows: int = 65536,
) -> JobStream:
    """The jobs `read_trace` reads, as a stream of `block`-job blocks.

    The rows are read `chunk_rows` at a time. A trace in submit-time order (the usual case)
    streams its overlay block by block as the engine pulls it; one out of order has every job's
    overlay drawn (in file order, as always) and sorted before the first block goes out.
    """
    trace = read_columns(path, cfg.gpus if gpus is None else gpus, chunk_rows=chunk_rows)
    pool = measured_pool(cfg)
    width, n = cfg.evals_per_job[1], len(trace.job_ids)
    blocks = (
        overlay.block(ov, cfg, pool, **columns)
        for ov, columns in _overlays(trace, cfg, seed, pool, block)
    )
    order = submission_order(trace.submit_s)
    if order is not None:
        blocks = split(JobBlock.concat(list(blocks), width).take(order), block)
    return JobStream(blocks, n, width, name=_name(trace, seed))
