"""What a run whose actor died leaves on its node (its directory and its cgroup) is removed by
the next run's sweep; a live run's, or one just being made, is not (rundir.py)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from rlguard.platform import joblimits, rundir
from rlguard.platform.joblimits import Cgroup

ACTOR = """
import sys, time
from pathlib import Path
from rlguard.platform.joblimits import Cgroup, describe
from rlguard.platform.rundir import RunDir
from rlguard.platform.sandbox import Limits
run = RunDir(Path(sys.argv[1]))
if describe().startswith("cgroup"):
    Cgroup(run.path.name, Limits(1 << 30, 64, 0, 1 << 30, 1 << 26))
print(run.path.name, flush=True)
time.sleep(300)
"""


@pytest.fixture
def dead_run(tmp_path) -> str:
    """A run directory (and cgroup) whose owner was SIGKILLed, as Ray kills an actor."""
    actor = subprocess.Popen(
        [sys.executable, "-c", ACTOR, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    name = actor.stdout.readline().strip()
    actor.send_signal(signal.SIGKILL)
    actor.wait()
    yield name
    Cgroup.existing(name).remove()


def test_a_dead_runs_directory_and_cgroup_are_swept(tmp_path, dead_run, monkeypatch):
    if joblimits.describe().startswith("cgroup"):
        assert Cgroup.existing(dead_run).dirs  # what it left
    monkeypatch.setattr(rundir, "GRACE_S", 0.0)
    assert rundir.sweep(tmp_path) == [dead_run]
    assert not (tmp_path / dead_run).exists()
    assert Cgroup.existing(dead_run).dirs == []


def test_a_live_runs_directory_is_left_alone(tmp_path, monkeypatch):
    live = rundir.RunDir(tmp_path)
    try:
        monkeypatch.setattr(rundir, "GRACE_S", 0.0)
        assert rundir.sweep(tmp_path) == []
        assert live.path.is_dir()
    finally:
        live.remove()
    assert not live.path.exists()


def test_a_young_directory_is_left_alone(tmp_path, dead_run):
    assert rundir.sweep(tmp_path) == []  # it may be one whose lock is about to be taken
    assert (tmp_path / dead_run).is_dir()
