"""Streams of job blocks equal the materialized workloads they stand for: same jobs, same results.

A million-job run streams its jobs in blocks (the paper generator and the trace reader both can);
everything smaller builds a Workload of per-job objects. These check, on small seeds, that the
two are the same jobs column for column, that the engine gives every job the same result from
either, and that reading a trace a few rows at a time equals reading it whole.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from curve_builders import write_mixed

from rlguard.cluster.blocks import JobBlock, JobStream, block_of
from rlguard.cluster.engine import Engine, RunResult
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.jobs import Workload
from rlguard.cluster.registry import BASES, RULES, RuleParams
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.traces import read_columns, read_trace, trace_stream
from rlguard.cluster.verdicts import _event
from rlguard.cluster.workload import paper_stream, paper_workload
from rlguard.errors import InputError

RESULT_FIELDS = [f.name for f in fields(RunResult) if f.name not in ("scheduler", "capacity")]


def joined(stream: JobStream) -> JobBlock:
    return JobBlock.concat(list(stream.blocks), stream.width)


def assert_same_jobs(streamed: JobBlock, materialized: JobBlock) -> None:
    """Column for column; eval columns compared over each job's own evals (not the padding)."""
    evals = np.arange(streamed.scores.shape[1]) < materialized.n_evals[:, None]
    for f in fields(JobBlock):
        a, b = getattr(streamed, f.name), getattr(materialized, f.name)
        if isinstance(a, list):
            assert a == b, f.name
        elif a.ndim == 2:
            width = b.shape[1]
            mask = evals[:, :width]
            np.testing.assert_array_equal(a[:, :width][mask], b[mask], err_msg=f.name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=f.name)


def assert_same_results(a: RunResult, b: RunResult) -> None:
    for name in RESULT_FIELDS:
        got, want = getattr(a, name), getattr(b, name)
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            assert got == want, name


def run(jobs: Workload | JobStream, base: str, gpus: int) -> RunResult:
    scheduler = Scheduler(BASES[base](), RULES["evalstop"](RuleParams()))
    return Engine(jobs, scheduler, gpus=gpus).run()


@pytest.fixture(scope="module")
def curves(tmp_path_factory) -> str:
    return str(write_mixed(tmp_path_factory.mktemp("curves") / "curves.json"))


@pytest.mark.parametrize("variant", ["defaults", "noiseless", "measured curves"])
def test_streamed_paper_workload_is_the_materialized_one(variant, curves) -> None:
    extra = {"defaults": {}, "noiseless": {"noise": 0.0}, "measured curves": {"curves": curves}}
    cfg = ScenarioConfig(n_jobs=150, gpus=32, **extra[variant])
    materialized = block_of(paper_workload(cfg, 5))
    for block in (7, 4096):  # the block size changes nothing
        assert_same_jobs(joined(paper_stream(cfg, 5, block=block)), materialized)


@pytest.mark.parametrize("base", sorted(BASES))
def test_streamed_run_gives_every_job_the_same_result(base) -> None:
    cfg = ScenarioConfig(n_jobs=120, gpus=16, load=1.3)  # a queue, so jobs wait and are preempted
    streamed = run(paper_stream(cfg, 2, block=16), base, cfg.gpus)
    materialized = run(paper_workload(cfg, 2), base, cfg.gpus)
    assert_same_results(streamed, materialized)
    assert streamed.stopped.any() and (streamed.preemptions.any() or not BASES[base].preemptive)


def test_a_workload_out_of_submission_order_reports_in_its_own_order() -> None:
    workload = paper_workload(ScenarioConfig(n_jobs=60, gpus=16, load=1.3), 4)
    shuffled = np.random.default_rng(0).permutation(len(workload.specs))
    mixed = Workload([workload.specs[i] for i in shuffled], [workload.truths[i] for i in shuffled])
    a, b = run(workload, "srtf-est", 16), run(mixed, "srtf-est", 16)
    for name in RESULT_FIELDS:
        got = getattr(b, name)
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, getattr(a, name)[shuffled], err_msg=name)
    assert b.stop_reasons == [a.stop_reasons[i] for i in shuffled]
    assert b.events == a.events


# --- traces --------------------------------------------------------------------------------------


def write_trace(path: Path, n: int = 40) -> Path:
    """A trace out of submit order, with integer times (ties), blank lines and a BOM."""
    rng = np.random.default_rng(3)
    lines = ["\ufeffjob_id,num_gpu,submit_time,duration,model_name"]
    for i in range(n):
        gpus, submit, duration = rng.choice([1, 2, 4, 8, 16]), rng.integers(0, 30) * 10, 300
        lines.append(f"j{i},{gpus},{submit},{duration + 10 * (i % 3)},m")
        if i % 11 == 0:
            lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_chunked_trace_reader_equals_the_whole_file_reader(tmp_path) -> None:
    path = write_trace(tmp_path / "t.csv")
    whole = read_columns(path, 64, chunk_rows=10**9)
    for chunk_rows in (1, 3, 16):
        chunked = read_columns(path, 64, chunk_rows=chunk_rows)
        assert chunked.job_ids == whole.job_ids
        for name in ("gpus", "submit_s", "duration_s"):
            np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name))
    cfg = ScenarioConfig(gpus=64)
    materialized = read_trace(path, cfg, 1)
    streamed = trace_stream(path, cfg, 1, block=6, chunk_rows=4)
    assert_same_jobs(joined(streamed), block_of(materialized))
    assert_same_results(
        run(trace_stream(path, cfg, 1, block=6, chunk_rows=4), "tiresias", 32),
        run(materialized, "tiresias", 32),
    )


def test_chunked_reader_reports_errors_like_the_whole_file_reader(tmp_path) -> None:
    path = write_trace(tmp_path / "t.csv")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[30] = "bad,abc,0,10,m"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    messages = set()
    for chunk_rows in (2, 10**9):
        with pytest.raises(InputError) as info:
            read_columns(path, 64, chunk_rows=chunk_rows)
        messages.add(str(info.value))
    assert messages == {f"{path}: line 31: field 'num_gpu': not a positive integer: 'abc'"}


def test_a_bad_byte_anywhere_is_reported_before_a_bad_row(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"job_id,num_gpu,submit_time,duration\na,x,0,1\nb,1,0,1\nc,1,0,\xff\n")
    with pytest.raises(InputError, match=r"line 4: not UTF-8 text \(byte 0xff\)"):
        read_columns(path, 64, chunk_rows=1)


def test_fast_eval_events_are_eval_events() -> None:
    args = ("job-1", "rlhf", 3, 0.25, 0.5, 1.2, None)
    fast, slow = _event(*args), EvalEvent(*args)
    assert type(fast) is EvalEvent and fast == slow and hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)
