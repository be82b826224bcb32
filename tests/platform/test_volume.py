"""A job's volume (volume.py), for real: a loop-mounted ext4 image of its disk limit, bound at the
job's directory and its logs' directory. What a polled limit misses is refused by the kernel
here: a single fallocate past the limit, a file unlinked while open, the job's stdout; what the
job holds on the host never passes the limit. Needs root and loop devices (skipped without them,
except in CI, where it fails)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rlguard.platform import jobhome
from rlguard.platform.jobhome import JobHome, prepare, remove_job_files
from rlguard.platform.volume import JobVolume, VolumeUnavailable, mounted

MiB = 1 << 20
LIMIT = 64 * MiB


@pytest.fixture
def volume(tmp_path):
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must run the volume tests as root")
        pytest.skip("mounting a job's volume needs root")
    job_dir, log = tmp_path / "jobs" / "job-1", tmp_path / "logs" / "job-1" / "attempt-1.log"
    made = JobVolume(tmp_path / "base", "job-1", LIMIT)
    made.attach(job_dir, log)
    yield made, job_dir, log
    made.detach(job_dir, log)


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_one_fallocate_past_the_limit_is_refused_by_the_kernel(volume):
    made, job_dir, _ = volume
    fd = os.open(job_dir / "burst", os.O_CREAT | os.O_WRONLY)
    with pytest.raises(OSError) as refused:
        os.posix_fallocate(fd, 0, 16 * LIMIT)  # one call, 1 GiB
    os.close(fd)
    assert refused.value.errno == errno.ENOSPC
    assert made.usage().used_bytes <= LIMIT
    assert allocated(made.image) <= LIMIT * 1.01  # what the host holds for the job
    assert made.full() is not None and "disk limit of 67108864" in made.full()


def test_an_unlinked_open_file_and_the_log_count_against_the_limit(volume):
    made, job_dir, log = volume
    with open(job_dir / "hidden", "wb") as hidden:
        os.unlink(job_dir / "hidden")
        hidden.write(os.urandom(30 * MiB))
        hidden.flush()
        os.fsync(hidden.fileno())
        assert made.usage().used_bytes > 30 * MiB  # no walk of the directory finds it
        with open(log, "ab") as out, pytest.raises(OSError) as full:  # the job's stdout
            for _ in range(64):
                out.write(b"x" * MiB)
                out.flush()
    assert full.value.errno == errno.ENOSPC
    assert made.usage().used_bytes <= LIMIT and allocated(made.image) <= LIMIT * 1.01


def test_the_image_outlives_a_detach_and_its_removal_takes_everything(volume, tmp_path):
    made, job_dir, log = volume
    (job_dir / "weights.bin").write_bytes(b"w" * 1000)
    made.detach(job_dir, log)
    assert not mounted(job_dir) and not (job_dir / "weights.bin").exists()
    assert not log.exists()  # no empty copy on the host: the store's is the one to read
    made.attach(job_dir, log)
    assert (job_dir / "weights.bin").read_bytes() == b"w" * 1000
    made.remove()
    assert not made.image.exists() and not mounted(made.mountpoint)


def test_a_node_that_cannot_mount_falls_back_to_the_polled_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no mkfs.ext4 here
    home = JobHome("job-2", str(tmp_path / "data" / "jobs"))
    prepared = prepare(home, LIMIT, tmp_path / "data" / "logs" / "job-2" / "attempt-1.log")
    assert prepared.volume is None and "mkfs.ext4" in prepared.soft_disk
    assert prepared.job_dir.is_dir() and not mounted(prepared.job_dir)
    with pytest.raises(VolumeUnavailable):
        JobVolume(tmp_path / "base", "job-2", LIMIT).attach(tmp_path / "j", tmp_path / "l")


def test_deleting_a_job_unmounts_and_removes_its_volume(tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("mounting a job's volume needs root")
    monkeypatch.delenv(jobhome.ROOT_ENV, raising=False)
    default_root = tmp_path / "data" / "jobs"
    home = JobHome("job-3", str(default_root))
    log = tmp_path / "data" / "logs" / "job-3" / "attempt-1.log"
    prepared = prepare(home, LIMIT, log)
    assert prepared.volume is not None and mounted(prepared.job_dir)
    (prepared.job_dir / "f").write_text("x")
    done = remove_job_files("job-3", str(default_root))  # its actor died: still mounted
    assert done["errors"] == []
    assert not prepared.volume.image.exists() and not prepared.job_dir.exists()
    assert not log.exists() and not mounted(log)
    assert not mounted(prepared.volume.mountpoint)
