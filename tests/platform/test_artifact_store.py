"""The artifact store and the job-side uploader, against a local directory and a real S3-protocol
server (moto, started by the tests): complete or absent, hash-equal, never led out of the job's
directory, held to the operator's upload limits before a byte is sent (and cut off, its key
removed, if it grows past them while sent), and refused at start when the URI is wrong or the
store unreachable."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.platform import uploader
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.uploader import (
    Allowance,
    BadCheckpointPath,
    CheckpointOverLimit,
    MiB,
    UploadLimits,
    upload_checkpoint,
)


@pytest.fixture(params=["local", "s3"])
def store_uri(request, tmp_path) -> str:
    if request.param == "local":
        yield f"file://{tmp_path / 'store'}"
        return
    s3 = request.getfixturevalue("s3_server")
    with s3.environment():
        yield f"{s3.uri}/{tmp_path.name}"


def _trainer_output(job_dir: Path) -> dict[str, str]:
    """A checkpoint directory as a trainer writes it; each file's sha256 by relative name."""
    ckpt = job_dir / "output" / "checkpoint-7"
    (ckpt / "sub").mkdir(parents=True)
    files = {"model.safetensors": os.urandom(3_000_000), "config.json": b"{}", "sub/opt.bin": b"x"}
    for name, data in files.items():
        (ckpt / name).write_bytes(data)
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def test_a_checkpoint_is_stored_whole_and_reads_back_equal(store_uri, tmp_path):
    job_dir = tmp_path / "job"
    written = _trainer_output(job_dir)
    store = ArtifactStore(store_uri)
    key = store.new_checkpoint_key("ten_a", "job_1", 7)
    assert key.startswith("ten_a/job_1/checkpoints/step-7-")
    manifest = upload_checkpoint(store_uri, str(job_dir), "output/checkpoint-7", key, 7)
    assert manifest == store.manifest(key)
    assert manifest["source"] == "output/checkpoint-7"
    assert {f["name"]: f["sha256"] for f in manifest["files"]} == written
    for name, sha in written.items():
        assert hashlib.sha256(b"".join(store.read(key, name))).hexdigest() == sha
    store.remove(store.job_key("ten_a", "job_1"))
    assert store.keys("ten_a") == []


def test_a_single_file_checkpoint_by_absolute_path(store_uri, tmp_path):
    job_dir = tmp_path / "job"
    (job_dir / "output").mkdir(parents=True)
    (job_dir / "output" / "weights-3").write_bytes(b"0.5")
    store = ArtifactStore(store_uri)
    key = store.new_checkpoint_key("t", "j", 3)
    manifest = upload_checkpoint(store_uri, str(job_dir), str(job_dir / "output/weights-3"), key, 3)
    assert [(f["name"], f["size"]) for f in manifest["files"]] == [("weights-3", 3)]


def test_the_uploader_is_never_led_out_of_the_job_directory(store_uri, tmp_path):
    job_dir, secret = tmp_path / "job", tmp_path / "secret"
    (job_dir / "output").mkdir(parents=True)
    secret.mkdir()
    (secret / "key").write_text("not the job's")
    (job_dir / "output" / "file-link").symlink_to(secret / "key")
    (job_dir / "output" / "dir-link").symlink_to(secret)
    (job_dir / "ckpt").mkdir()
    (job_dir / "ckpt" / "weights").write_text("mine")
    (job_dir / "ckpt" / "planted").symlink_to(secret / "key")
    (job_dir / "ckpt" / "planted-dir").symlink_to(secret)
    store = ArtifactStore(store_uri)
    for reported in (
        "../secret",
        str(secret),
        "/etc/passwd",
        "output/file-link",
        "dir-link/key",
        "output/dir-link/key",
        "output/dir-link",
        "",
        ".",
    ):
        with pytest.raises(BadCheckpointPath):
            upload_checkpoint(
                store_uri, str(job_dir), reported, store.new_checkpoint_key("t", "j", 1), 1
            )
    manifest = upload_checkpoint(
        store_uri, str(job_dir), "ckpt", store.new_checkpoint_key("t", "j", 2), 2
    )
    assert [f["name"] for f in manifest["files"]] == ["weights"]  # the links are not followed


LIMITS = UploadLimits(checkpoint_files=5, checkpoint_mb=1, job_files=8, job_mb=2)


def _checkpoint(job_dir: Path, name: str, files: dict[str, int]) -> str:
    for file, size in files.items():
        path = job_dir / name / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    return name


@pytest.mark.parametrize(
    "files, used, option, value",
    [
        ({f"f{i}": 10 for i in range(6)}, (0, 0), "--checkpoint-max-files", 6),
        ({"big": MiB + 1}, (0, 0), "--checkpoint-max-mb", MiB + 1),
        ({"nested/a": MiB // 2, "b": MiB // 2 + 1}, (0, 0), "--checkpoint-max-mb", MiB + 1),
        ({"a": 1, "b": 1}, (7, 0), "--job-max-upload-files", 9),
        ({"a": MiB // 2}, (0, 2 * MiB - 10), "--job-max-upload-mb", 2 * MiB - 10 + MiB // 2),
    ],
)
def test_a_checkpoint_over_a_limit_is_refused_before_a_byte_is_sent(
    store_uri, tmp_path, files, used, option, value
):
    job_dir = tmp_path / "job"
    reported = _checkpoint(job_dir, "ckpt", files)
    store = ArtifactStore(store_uri)
    key = store.new_checkpoint_key("t", "j", 1)
    with pytest.raises(CheckpointOverLimit) as refused:
        upload_checkpoint(store_uri, str(job_dir), reported, key, 1, Allowance(LIMITS, *used))
    assert (refused.value.option, refused.value.value) == (option, value)
    limit = {"--checkpoint-max-files": 5, "--checkpoint-max-mb": 1, "--job-max-upload-files": 8}
    assert f"{value} {refused.value.unit}, over the limit of" in str(refused.value)
    assert f"({option} {limit.get(option, 2)})" in str(refused.value)
    assert store.keys("t") == []  # refused before the first file: nothing was sent


def test_links_are_not_counted_and_a_checkpoint_within_the_limits_is_stored(store_uri, tmp_path):
    job_dir, outside = tmp_path / "job", tmp_path / "outside"
    _checkpoint(outside, "huge", {f"f{i}": 10 for i in range(20)})
    reported = _checkpoint(job_dir, "ckpt", {"model.bin": MiB - 100, "config.json": 100})
    (job_dir / "ckpt" / "planted").symlink_to(outside / "huge")  # 20 files it must not count
    (job_dir / "ckpt" / "planted-file").symlink_to(outside / "huge" / "f1")
    key = ArtifactStore(store_uri).new_checkpoint_key("t", "j", 1)
    manifest = upload_checkpoint(store_uri, str(job_dir), reported, key, 1, Allowance(LIMITS))
    assert sorted(f["name"] for f in manifest["files"]) == ["config.json", "model.bin"]
    assert manifest["bytes"] == MiB


def test_a_checkpoint_that_grows_past_a_limit_while_sent_is_cut_off(
    store_uri, tmp_path, monkeypatch
):
    """The job writes on after the check (here: the check sees nothing): the upload stops at
    the limit and removes what it sent; no manifest, nothing under the key."""
    job_dir = tmp_path / "job"
    reported = _checkpoint(job_dir, "ckpt", {"a": MiB // 2, "b": MiB // 2, "c": MiB // 2})
    monkeypatch.setattr(uploader, "measure", lambda *args: (0, 0))
    store = ArtifactStore(store_uri)
    key = store.new_checkpoint_key("t", "j", 1)
    with pytest.raises(CheckpointOverLimit, match="grew to more than") as refused:
        upload_checkpoint(store_uri, str(job_dir), reported, key, 1, Allowance(LIMITS))
    assert refused.value.option == "--checkpoint-max-mb"
    assert store.keys(key) == [] and store.manifest(key) is None


KILLED_UPLOAD = """
import os, sys
from rlguard.platform.uploader import upload_checkpoint
upload_checkpoint(*sys.argv[1:5], 1)
"""


def test_an_upload_killed_half_way_is_never_complete(store_uri, tmp_path):
    """SIGKILL the uploader (a process of its own) once its first file is in the store: the
    checkpoint's key holds a part of it and no manifest, which reads as absent."""
    job_dir = tmp_path / "job"
    ckpt = job_dir / "ckpt"
    ckpt.mkdir(parents=True)
    (ckpt / "a-small").write_bytes(b"first")
    with open(ckpt / "b-large", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: it takes far longer to send than to kill
    store = ArtifactStore(store_uri)
    key = store.new_checkpoint_key("t", "j", 1)
    uploader = subprocess.Popen(
        [sys.executable, "-c", KILLED_UPLOAD, store_uri, str(job_dir), "ckpt", key],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    deadline = time.monotonic() + 60
    while not any(k.endswith("a-small") for k in store.keys(key)):
        assert uploader.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    uploader.send_signal(signal.SIGKILL)
    uploader.wait()
    assert store.keys(key) and store.manifest(key) is None


@pytest.mark.parametrize(
    "uri, message",
    [
        ("gs://bucket/x", "unknown scheme 'gs'"),
        ("ftp://host/x", "unknown scheme 'ftp'"),
        ("file://otherhost/x", "unknown scheme 'file'"),
        ("s3:///prefix", "names no bucket"),
    ],
)
def test_an_unknown_store_uri_is_one_line(uri, message):
    with pytest.raises(InputError, match=message) as refused:
        ArtifactStore(uri)
    assert "\n" not in str(refused.value)


def test_an_unreachable_store_is_refused_at_start(tmp_path, s3_server):
    with s3_server.environment():
        s3_server.proxy.down()
        try:
            with pytest.raises(InputError, match="cannot use s3://") as refused:
                ArtifactStore(f"{s3_server.uri}/x").check()
        finally:
            s3_server.proxy.up()
        ArtifactStore(f"{s3_server.uri}/x").check()
    assert "\n" not in str(refused.value)
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="cannot use"):
        ArtifactStore(str(tmp_path / "file" / "store")).check()


def test_serve_refuses_a_bad_store_in_one_line(tmp_path, s3_server):
    """`rlguard serve` itself: exit 2, one `error:` line, before any Ray head is started."""
    from live_platform import RLGUARD

    s3_server.proxy.down()
    try:
        for storage in ("gs://bucket/x", f"{s3_server.uri}/x"):
            done = subprocess.run(
                [*RLGUARD, "serve", "--data-dir", str(tmp_path / "data"), "--storage", storage],
                env={**os.environ, **s3_server.env},
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith("error: --storage: ")
            assert len(done.stderr.strip().splitlines()) == 1
    finally:
        s3_server.proxy.up()
    assert not (tmp_path / "data" / "ray-head.json").exists()


def test_download_refuses_bad_choices_in_one_line(tmp_path):
    """The CLI's side of `rlguard jobs download`: a bad --checkpoint, a pruned one, a file name
    that would leave --out."""
    from rlguard.platform.download import pick, target

    listed = [
        {"id": "c1", "step": 1, "path": "output/best", "is_best": True, "stored": True},
        {"id": "c2", "step": 2, "path": "output/w", "is_best": False, "stored": False},
        {"id": "c3", "step": 3, "path": "output/best", "is_best": False, "stored": True},
        {"id": "c4", "step": 3, "path": "output/step-3", "is_best": False, "stored": True},
    ]
    assert pick(listed, "best")["id"] == pick(listed, "1")["id"] == "c1"
    assert pick(listed, "output/step-3")["id"] == "c4"  # by name: a step may hold several
    for which, message in (
        ("latest", "best, a step number or a checkpoint's name"),
        ("4", "no checkpoint 4"),
        ("2", "pruned"),
        ("3", r"step 3 has 2 \(output/best, output/step-3\): name one"),
    ):
        with pytest.raises(InputError, match=message):
            pick(listed, which)
    assert target(tmp_path, "sub/a.bin") == tmp_path.resolve() / "sub" / "a.bin"
    with pytest.raises(InputError, match="leaves --out"):
        target(tmp_path, "../escape")
