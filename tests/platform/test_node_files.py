"""A deleted job's files on one node (jobhome.remove_job_files, what each node runs when a job
is deleted), on real files without Ray: its directory under the node's own root and under the
server's default root, its run's logs and its train config go; a link the job planted is
removed, never followed, whether it points at a directory or a file outside, or stands where
its whole directory should be; other jobs' files stay; a second call finds nothing and says so."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlguard.platform.jobhome import ROOT_ENV, remove_job_files


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret").write_text("keep")
    (outside / "deep" / "weights").write_text("keep too")
    return outside


def _hostile_job(job_dir: Path, outside: Path) -> None:
    """What a hostile job leaves: links out of its directory, nested and at its top, and a
    directory it made unreadable."""
    (job_dir / "output" / "checkpoint-1").mkdir(parents=True)
    (job_dir / "output" / "checkpoint-1" / "model.bin").write_bytes(b"x" * 1000)
    (job_dir / "dir-link").symlink_to(outside)
    (job_dir / "file-link").symlink_to(outside / "secret")
    (job_dir / "output" / "checkpoint-1" / "deep-link").symlink_to(outside / "deep")
    if os.geteuid() == 0:  # the node's remover runs as root, as the sandboxed jobs' nodes do
        (job_dir / "locked").mkdir()
        (job_dir / "locked" / "inside").write_text("x")
        (job_dir / "locked").chmod(0)


def _intact(outside: Path) -> bool:
    return (outside / "secret").read_text() == "keep" and (
        outside / "deep" / "weights"
    ).read_text() == "keep too"


def test_a_deleted_jobs_files_go_from_the_node_and_nothing_a_link_points_at(tmp_path, monkeypatch):
    outside = _outside(tmp_path)
    data, node_root = tmp_path / "data", tmp_path / "scratch"
    monkeypatch.setenv(ROOT_ENV, str(node_root))
    job, other = node_root / "job-1", node_root / "job-2"
    _hostile_job(job, outside)
    (other / "output").mkdir(parents=True)
    (data / "jobs" / "job-1" / "output").mkdir(parents=True)  # an attempt on the default root
    (data / "logs" / "job-1").mkdir(parents=True)
    (data / "logs" / "job-1" / "attempt-1.log").write_text("log")
    (data / "configs").mkdir()
    (data / "configs" / "job-1.yaml").write_text("steps: 1")
    (data / "configs" / "job-2.yaml").write_text("steps: 2")

    done = remove_job_files("job-1", str(data / "jobs"))
    assert done["errors"] == []
    mine = (job, data / "jobs" / "job-1", data / "logs" / "job-1", data / "configs" / "job-1.yaml")
    assert sorted(done["removed"]) == sorted(str(p) for p in mine)
    assert not job.exists() and not (data / "jobs" / "job-1").exists()
    assert _intact(outside)
    assert (other / "output").is_dir() and (data / "configs" / "job-2.yaml").is_file()
    assert remove_job_files("job-1", str(data / "jobs")) == {"removed": [], "errors": []}


def test_a_link_where_the_jobs_directory_should_be_is_unlinked_not_followed(tmp_path):
    outside = _outside(tmp_path)
    jobs = tmp_path / "data" / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "job-1").symlink_to(outside)
    assert remove_job_files("job-1", str(jobs))["removed"] == [str(jobs / "job-1")]
    assert not os.path.lexists(jobs / "job-1") and _intact(outside)


@pytest.mark.parametrize("job_id", ["..", "../data", "job-1/../..", "", ".hidden", "a b"])
def test_only_a_job_id_names_what_is_removed(tmp_path, job_id):
    (tmp_path / "data" / "jobs").mkdir(parents=True)
    with pytest.raises(ValueError, match="not a job id"):
        remove_job_files(job_id, str(tmp_path / "data" / "jobs"))
    assert (tmp_path / "data" / "jobs").is_dir()


def test_ray_unreachable_leaves_every_node_named_not_an_error(monkeypatch):
    """A delete while Ray's control plane is down: each node the job ran on is answered as
    holding its files still, with why, so the API answers rather than failing."""
    from rlguard.platform import executor

    def down():
        raise ConnectionError("GCS at 127.0.0.1:6379 refused the connection\nmore")

    monkeypatch.setattr(executor.ray, "nodes", down)
    left = executor.RayExecutor.clear_job(None, "job", "/data/jobs", {"b", "a"})  # type: ignore[arg-type]
    assert [(n.node_id, n.error) for n in left] == [
        ("a", "Ray unreachable: GCS at 127.0.0.1:6379 refused the connection"),
        ("b", "Ray unreachable: GCS at 127.0.0.1:6379 refused the connection"),
    ]
