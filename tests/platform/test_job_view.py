"""What a job may see, without a live platform: `--mount` parsing, the config path check (`..`,
symlinks, relative paths), the bwrap command line's view, and `rlguard serve`'s refusal on a
host that cannot sandbox (one line, exit 2, nothing started)."""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.platform import seccomp
from rlguard.platform.jobview import Defaults, JobViews, host_problem
from rlguard.platform.mounts import check_config_paths, check_mounts, parse_mount
from rlguard.platform.sandbox import API_SOCKET, JobSandbox, Limits, bwrap_argv


def test_a_mount_is_parsed_for_everyone_or_one_tenant(tmp_path):
    root = tmp_path / "models"
    root.mkdir(mode=0o755)
    assert parse_mount(f"models={root}:ro").tenant is None
    mine = parse_mount(f"acme/models={root}:ro")
    assert (mine.tenant, mine.name, mine.path) == ("acme", "models", str(root.resolve()))


def test_a_mount_the_jobs_uids_cannot_read_is_refused(tmp_path):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(InputError, match=r"cannot read it \(chmod o\+rx\)"):
        parse_mount(f"models={closed}:ro")


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("models", "expected [TENANT/]NAME=PATH:ro"),
        ("models=relative:ro", "PATH must be absolute"),
        ("models=/nonexistent-dir:ro", "no such directory /nonexistent-dir"),
        ("models=/tmp:rw", "only read-only mounts"),
        ("a/b/c=/tmp:ro", "expected [TENANT/]NAME=PATH:ro"),
    ],
)
def test_a_bad_mount_is_refused_naming_it(raw, says):
    with pytest.raises(InputError, match="option --mount") as e:
        parse_mount(raw)
    assert says in str(e.value) and raw in str(e.value)


def test_a_mount_over_the_data_directory_is_refused(tmp_path):
    tmp_path.chmod(0o755)
    (tmp_path / "data").mkdir()
    for path in (tmp_path, tmp_path / "data"):
        with pytest.raises(InputError, match="overlaps the data directory"):
            check_mounts([parse_mount(f"x={path}:ro")], tmp_path / "data")


@pytest.fixture
def view(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "model").write_text("m")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "model").write_text("t")
    (tmp_path / "mine" / "link").symlink_to(tmp_path / "theirs")
    return tmp_path


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("{root}/theirs/model", "is outside this job's view"),
        ("{root}/mine/../theirs/model", "is outside this job's view"),
        ("{root}/mine/link/model", "leads outside this job's view"),
        ("model", "must be an absolute path"),
        ("/etc/shadow", "is outside this job's view"),
    ],
)
def test_a_config_path_outside_the_view_is_refused(view, value, says):
    value = value.format(root=view)
    with pytest.raises(InputError) as e:
        check_config_paths([("policy.path", value)], view / "job", [str(view / "mine")])
    assert str(e.value) == f"config: policy.path: {value!r} {says}"


def test_a_config_path_in_the_view_passes(view):
    check_config_paths([("policy.path", f"{view}/mine/model")], view / "job", [str(view / "mine")])


def _sandbox(tmp_path, read_only=()) -> JobSandbox:
    data = tmp_path / "data"
    job = data / "jobs" / "job-1"
    job.mkdir(parents=True)
    limits = Limits(1 << 30, 64, 1.0, 1 << 30, 1 << 26)
    return JobSandbox(7, str(job), str(data), tuple(read_only), limits, "http://127.0.0.1:1")


def _binds(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_the_view_binds_the_job_dir_writable_and_code_read_only(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    sandbox = _sandbox(tmp_path, [str(code)])
    argv = bwrap_argv(sandbox, ["true"], sandbox.job_dir, "/tmp/sock")
    assert _binds(argv, "--bind") == [sandbox.job_dir, "/tmp/sock"]
    assert str(code) in _binds(argv, "--ro-bind")
    assert sandbox.data_dir not in _binds(argv, "--ro-bind") + _binds(argv, "--bind")
    assert argv[argv.index("--bind") + 5] == API_SOCKET
    assert {"--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent"} <= set(argv)
    tail = argv[argv.index("--", argv.index("--chdir")) :]
    assert tail[1:3] == ["setpriv", "--reuid=7"] and "--no-new-privs" in tail


def test_a_read_only_root_holding_the_data_dir_is_hidden_under_a_tmpfs(tmp_path):
    sandbox = _sandbox(tmp_path, [str(tmp_path)])
    argv = bwrap_argv(sandbox, ["true"], sandbox.job_dir, "/tmp/sock")
    tmpfs = _binds(argv, "--tmpfs")
    assert sandbox.data_dir in tmpfs
    assert argv.index(sandbox.data_dir) > argv.index(str(tmp_path))  # mounted over the root
    assert argv.index("--bind") > argv.index(sandbox.data_dir)  # and the job dir over it


def test_serve_refuses_to_start_where_it_cannot_sandbox(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap, no setpriv
    done = subprocess.run(
        [sys.executable, "-m", "rlguard.cli", "serve", "--data-dir", str(tmp_path / "d")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot sandbox jobs on this host" in lines[0]
    assert "--single-tenant" in lines[0]
    assert not (Path(tmp_path) / "d" / "ray-head.json").exists()  # nothing was started


def test_a_read_only_root_holding_a_nodes_jobs_root_is_hidden_too(tmp_path):
    """A node's own root of jobs' directories (RLGUARD_JOBS_ROOT) under a mount: the other
    jobs there stay out of view, as under the data directory."""
    node_root = tmp_path / "scratch" / "jobs"
    (node_root / "job-1").mkdir(parents=True)
    sandbox = replace(
        _sandbox(tmp_path, [str(tmp_path / "scratch")]), job_dir=str(node_root / "job-1")
    )
    argv = bwrap_argv(sandbox, ["true"], sandbox.job_dir, "/tmp/sock")
    assert str(node_root) in _binds(argv, "--tmpfs")
    assert argv.index(str(node_root)) > argv.index(str(tmp_path / "scratch"))
    assert argv.index("--bind") > argv.index(str(node_root))


def test_a_train_config_under_a_nodes_root_is_bound_read_only_over_its_tmpfs(tmp_path):
    """On a node with a root of its own, the job's train config is under `ROOT/.rlguard/`
    (jobhome.node_file): bound read-only after the tmpfs that hides the root, never as a
    read-only root of its own that the tmpfs would cover."""
    node_root = tmp_path / "scratch" / "jobs"
    (node_root / "job-1").mkdir(parents=True)
    config = node_root / ".rlguard" / "configs" / "job-1.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("steps: 1\n")
    sandbox = replace(
        _sandbox(tmp_path, [str(tmp_path / "scratch"), str(config)]),
        job_dir=str(node_root / "job-1"),
    )
    argv = bwrap_argv(sandbox, ["true"], sandbox.job_dir, "/tmp/sock")
    assert _binds(argv, "--ro-bind").count(str(config)) == 1
    assert argv.index(str(config)) > argv.index(str(node_root))  # over the tmpfs, not under
    dirs = _binds(argv, "--dir")
    assert str(config.parent) in dirs and str(node_root / ".rlguard") in dirs


def test_the_seccomp_filter_is_handed_to_bwrap_by_descriptor(tmp_path):
    sandbox = _sandbox(tmp_path)
    argv = bwrap_argv(sandbox, ["true"], sandbox.job_dir, "/tmp/sock", seccomp_fd=9)
    assert argv.index("--seccomp") < argv.index("--", argv.index("--chdir"))
    assert _binds(argv, "--seccomp") == ["9"]
    assert "--seccomp" not in bwrap_argv(sandbox, ["true"], sandbox.job_dir, "/tmp/sock")


def test_the_operator_opts_jobs_out_of_the_seccomp_filter(tmp_path):
    def sandbox(defaults: Defaults) -> JobSandbox | None:
        views = JobViews(True, tmp_path, [], "http://127.0.0.1:1", defaults)
        return views.sandbox(2_000_000_001, "acme", tmp_path / "job", 1.0, None)

    assert sandbox(Defaults()).seccomp
    assert not sandbox(Defaults(seccomp=False)).seccomp


def test_a_host_without_libseccomp_fails_the_start_up_check_naming_it(monkeypatch):
    """As where libseccomp.so.2 is not installed: pyseccomp cannot find it when imported."""
    find_library = ctypes.util.find_library
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(
        ctypes.util, "find_library", lambda n: None if n == "seccomp" else find_library(n)
    )
    monkeypatch.delitem(sys.modules, "pyseccomp", raising=False)
    seccomp.program.cache_clear()
    try:
        problem = host_problem()
    finally:
        seccomp.program.cache_clear()
    assert problem is not None and "libseccomp" in problem and "\n" not in problem
    assert "--no-job-seccomp" in problem
