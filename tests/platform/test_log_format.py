"""The server's JSON log lines: one object per line, the job and run a line is about as fields."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from rlguard.platform.log_format import about, configure_logging


@pytest.fixture
def root_restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_line_about_a_run_carries_its_ids(root_restored, monkeypatch, log_format):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    configure_logging(log_format)
    logging.getLogger("rlguard.platform.service").warning(
        "run %s not placed by Ray in %.0f s", "run-7", 60, extra=about("job-3", "run-7")
    )
    logging.getLogger("rlguard.platform.ingest").info("no ids here")
    first, second = stream.getvalue().splitlines()
    if log_format == "text":
        assert first.endswith("rlguard.platform.service run run-7 not placed by Ray in 60 s")
        return
    line = json.loads(first)
    assert line["message"] == "run run-7 not placed by Ray in 60 s"
    assert (line["level"], line["logger"]) == ("WARNING", "rlguard.platform.service")
    assert (line["job_id"], line["run_id"]) == ("job-3", "run-7") and "time" in line
    assert "job_id" not in json.loads(second)


def test_about_leaves_out_what_it_was_not_told():
    assert about(run_id="run-1") == {"run_id": "run-1"}
    assert about() == {}
