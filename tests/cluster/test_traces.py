"""Trace replay: the Tiresias layout, the seeded overlay and strict one-line input errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rlguard.cluster.engine import Engine
from rlguard.cluster.jobs import JobKind
from rlguard.cluster.policies.fifo import Fifo
from rlguard.cluster.scenario import ScenarioConfig
from rlguard.cluster.scheduler import Scheduler
from rlguard.cluster.traces import PACKAGED_TIRESIAS_TRACE, read_trace
from rlguard.errors import InputError

CFG = ScenarioConfig()
HEADER = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval"


def write(tmp_path: Path, text: str, name: str = "traces.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def error_of(path: Path | str, *, gpus: int | None = None) -> str:
    with pytest.raises(InputError) as info:
        read_trace(path, CFG, 0, gpus=gpus)
    message = str(info.value)
    assert "\n" not in message
    return message


# --- reading -------------------------------------------------------------------------------------


def test_packaged_trace_reads_sixty_jobs():
    w = read_trace(PACKAGED_TIRESIAS_TRACE, CFG, 0)
    assert len(w.specs) == len(w.truths) == 60
    assert w.name == "trace-tiresias_60_job-seed0"
    by_id = {s.job_id: (s, t) for s, t in zip(w.specs, w.truths, strict=True)}
    # rows 2, 3, 31 and 61 of the CSV (header = line 1)
    for job_id, gpus, submit, duration in [
        ("0", 1, 0.0, 164.0),
        ("1", 8, 30.0, 147.0),
        ("29", 1, 861.0, 121.0),
        ("59", 1, 1779.0, 122.0),
    ]:
        spec, truth = by_id[job_id]
        assert (spec.gpus, spec.submit_s, truth.duration_s) == (gpus, submit, duration)
    submits = [s.submit_s for s in w.specs]
    assert submits == sorted(submits)
    assert all(s.gpus <= CFG.gpus for s in w.specs)


def test_same_seed_same_overlay_other_seed_other_kinds():
    a = read_trace(PACKAGED_TIRESIAS_TRACE, CFG, 3)
    b = read_trace(PACKAGED_TIRESIAS_TRACE, CFG, 3)
    c = read_trace(PACKAGED_TIRESIAS_TRACE, CFG, 4)
    assert a.specs == b.specs
    for ta, tb in zip(a.truths, b.truths, strict=True):
        np.testing.assert_array_equal(ta.observed_scores, tb.observed_scores)
        assert ta.hacking == tb.hacking
    assert [s.kind for s in a.specs] != [s.kind for s in c.specs]
    # sizes and arrivals come from the trace, not the seed
    assert [(s.job_id, s.gpus, s.submit_s) for s in a.specs] == [
        (s.job_id, s.gpus, s.submit_s) for s in c.specs
    ]


def test_only_required_columns(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time,duration\na,2,5,100\nb,8.0,0,7.5\n")
    w = read_trace(path, CFG, 0)
    assert [(s.job_id, s.gpus, s.submit_s) for s in w.specs] == [("b", 8, 0.0), ("a", 2, 5.0)]
    assert [t.duration_s for t in w.truths] == [7.5, 100.0]
    assert all(isinstance(s.gpus, int) for s in w.specs)


def test_unknown_columns_ignored_and_order_free(tmp_path):
    path = write(tmp_path, "duration,colour,job_id,submit_time,num_gpu\n164.0,red,x,0,1\n")
    (spec,), (truth,) = read_trace(path, CFG, 0).specs, read_trace(path, CFG, 0).truths
    assert (spec.job_id, spec.gpus, spec.submit_s, truth.duration_s) == ("x", 1, 0.0, 164.0)


def test_sort_is_stable_and_overlay_follows_file_order(tmp_path):
    rows = "".join(f"j{i},1,{t},{i},m,100,1\n" for i, t in enumerate([50, 0, 50, 0]))
    w = read_trace(write(tmp_path, HEADER + "\n" + rows), CFG, 1)
    assert [s.job_id for s in w.specs] == ["j1", "j3", "j0", "j2"]
    # the overlay is drawn per row in file order, so sorting does not change a job's draw
    rows_sorted = "".join(f"j{i},1,{t},{i},m,100,1\n" for i, t in enumerate([0, 0, 0, 0]))
    same_order = read_trace(write(tmp_path, HEADER + "\n" + rows_sorted, "b.csv"), CFG, 1)
    est = {s.job_id: s.estimate_s for s in same_order.specs}
    assert all(s.estimate_s == est[s.job_id] for s in w.specs)


def test_submit_times_not_shifted(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time,duration\na,1,500,10\nb,1,700,10\n")
    assert [s.submit_s for s in read_trace(path, CFG, 0).specs] == [500.0, 700.0]


def test_bom_crlf_blank_lines_and_padding(tmp_path):
    text = "\ufeffjob_id, num_gpu ,submit_time,duration\r\n\r\n a ,1, 3 ,4\r\n"
    w = read_trace(write(tmp_path, text), CFG, 0)
    assert [(s.job_id, s.gpus, s.submit_s) for s in w.specs] == [("a", 1, 3.0)]


def test_gpus_override_caps_cluster(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time,duration\na,16,0,10\n")
    assert read_trace(path, CFG, 0, gpus=16).specs[0].gpus == 16
    assert (
        error_of(path, gpus=8) == f"{path}: line 2: field 'num_gpu': 16 GPUs exceed the cluster's 8"
    )


def test_accepts_str_and_relative_path(tmp_path, monkeypatch):
    write(tmp_path, "job_id,num_gpu,submit_time,duration\na,1,0,10\n")
    monkeypatch.chdir(tmp_path)
    assert len(read_trace("traces.csv", CFG, 0).specs) == 1


def test_engine_runs_packaged_trace_to_completion():
    w = read_trace(PACKAGED_TIRESIAS_TRACE, CFG, 0)
    result = Engine(w, Scheduler(Fifo()), gpus=64).run()
    assert len(result.finish_s) == 60
    assert not np.isnan(result.finish_s).any()
    submit = np.array([s.submit_s for s in w.specs])
    assert (result.finish_s > submit).all()
    assert {s.kind for s in w.specs} <= set(JobKind)


# --- bad input -----------------------------------------------------------------------------------

GOOD = "0,1,0,606,vgg19,164,30\n"


def bad_row(tmp_path: Path, row: str, *, before: int = 5) -> str:
    """Error message for a CSV whose line ``before + 2`` is ``row`` (after good rows)."""
    good = "".join(f"{i},1,{i},1,m,10,1\n" for i in range(100, 100 + before))
    return error_of(write(tmp_path, HEADER + "\n" + good + row + "\n"))


@pytest.mark.parametrize(
    ("row", "tail"),
    [
        ("7,abc,0,1,m,10,1", "field 'num_gpu': not a positive integer: 'abc'"),
        ("7,8.5,0,1,m,10,1", "field 'num_gpu': not a positive integer: '8.5'"),
        ("7,0,0,1,m,10,1", "field 'num_gpu': not a positive integer: '0'"),
        ("7,-2,0,1,m,10,1", "field 'num_gpu': not a positive integer: '-2'"),
        ("7,,0,1,m,10,1", "field 'num_gpu': not a positive integer: ''"),
        ("7,128,0,1,m,10,1", "field 'num_gpu': 128 GPUs exceed the cluster's 64"),
        ("7,1,0,1,m,0,1", "field 'duration': must be positive (seconds): '0'"),
        ("7,1,0,1,m,-3.5,1", "field 'duration': must be positive (seconds): '-3.5'"),
        ("7,1,0,1,m,ten,1", "field 'duration': not a number: 'ten'"),
        ("7,1,0,1,m,inf,1", "field 'duration': not a finite number: 'inf'"),
        ("7,1,-1,1,m,10,1", "field 'submit_time': must be non-negative (seconds): '-1'"),
        ("7,1,soon,1,m,10,1", "field 'submit_time': not a number: 'soon'"),
        ("7,1,nan,1,m,10,1", "field 'submit_time': not a finite number: 'nan'"),
        (",1,0,1,m,10,1", "field 'job_id': empty"),
        ("101,1,0,1,m,10,1", "field 'job_id': duplicate job_id '101' (first on line 3)"),
        ("7,1,0,1,m", "field 'duration': missing (row has 5 fields, header has 7)"),
        ("7,1,0,1,m,10,1,x,y", "too many fields (9, header has 7)"),
    ],
)
def test_bad_row_names_file_line_field_value(tmp_path, row, tail):
    path = tmp_path / "traces.csv"
    assert bad_row(tmp_path, row) == f"{path}: line 7: {tail}"


def test_line_numbers_are_physical_lines(tmp_path):
    # a blank line and a quoted field spanning two lines both count
    text = HEADER + "\n\n" + '0,1,0,1,"multi\nline",10,1\n' + "1,x,0,1,m,10,1\n"
    path = write(tmp_path, text)
    assert error_of(path) == f"{path}: line 5: field 'num_gpu': not a positive integer: 'x'"


def test_missing_column(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time\n0,1,0\n")
    assert error_of(path) == (
        f"{path}: line 1: missing required column 'duration' (have: job_id, num_gpu, submit_time)"
    )


def test_missing_columns_listed_together(tmp_path):
    path = write(tmp_path, "job_id,gpus,time,duration\n0,1,0,1\n")
    assert error_of(path) == (
        f"{path}: line 1: missing required columns 'num_gpu', 'submit_time' "
        "(have: job_id, gpus, time, duration)"
    )


def test_duplicate_column(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time,duration,num_gpu\n0,1,0,1,2\n")
    assert error_of(path) == f"{path}: line 1: duplicate column 'num_gpu'"


def test_empty_trace_header_only(tmp_path):
    path = write(tmp_path, HEADER + "\n")
    assert error_of(path) == f"{path}: line 2: empty trace: no job rows"


def test_empty_file(tmp_path):
    path = write(tmp_path, "")
    assert error_of(path) == f"{path}: line 1: empty trace: no header row"


def test_missing_file(tmp_path):
    path = tmp_path / "nope.csv"
    assert error_of(path) == f"{path}: cannot read trace: No such file or directory"


def test_directory_is_not_a_trace(tmp_path):
    assert error_of(tmp_path).startswith(f"{tmp_path}: cannot read trace: ")


def test_relative_path_kept_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, HEADER + "\n" + GOOD + "1,abc,0,1,m,10,1\n")
    assert (
        error_of("traces.csv")
        == "traces.csv: line 3: field 'num_gpu': not a positive integer: 'abc'"
    )


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = write(tmp_path, HEADER + "\n" + GOOD)
    path.chmod(0)
    try:
        assert error_of(path) == f"{path}: cannot read trace: Permission denied"
    finally:
        path.chmod(0o644)


def test_not_utf8(tmp_path):
    path = tmp_path / "traces.csv"
    path.write_bytes((HEADER + "\n" + GOOD).encode() + b"1,1,0,1,caf\xe9,10,1\n")
    assert error_of(path) == f"{path}: line 3: not UTF-8 text (byte 0xe9)"


def test_malformed_csv(tmp_path):
    path = write(tmp_path, HEADER + "\n" + GOOD + '1,1,0,1,"m"x,10,1\n')
    assert error_of(path) == f"""{path}: line 3: malformed CSV: ',' expected after '"'"""


def test_unterminated_quote_is_an_error(tmp_path):
    path = write(tmp_path, HEADER + "\n" + GOOD + '1,1,0,1,"m,10,1\n2,1,0,1,m,10,1\n')
    assert error_of(path) == f"{path}: line 4: malformed CSV: unexpected end of data"


def test_malformed_header(tmp_path):
    path = write(tmp_path, '"job_id"x,num_gpu,submit_time,duration\n0,1,0,1\n')
    assert error_of(path).startswith(f"{path}: line 1: malformed CSV: ")


def test_cluster_size_must_be_positive(tmp_path):
    path = write(tmp_path, HEADER + "\n" + GOOD)
    assert error_of(path, gpus=0) == "cluster GPUs must be positive, got 0"
