"""A new attempt's checkpoint back from the artifact store (restore.py), on real files and a real
local store: the newest complete one is put where the job reported it from; one without a
manifest or with a file that does not match its manifest is never put in place (the one before
it is); a job directory that already holds it byte for byte downloads nothing; links a job
planted are never followed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.platform.artifacts import MANIFEST, ArtifactStore
from rlguard.platform.executor import JobProcess
from rlguard.platform.jobhome import ROOT_ENV, JobHome
from rlguard.platform.restore import restore_latest
from rlguard.platform.uploader import upload_checkpoint

STEP_DIR = "output/checkpoints/step-000006"


@pytest.fixture
def store(tmp_path) -> ArtifactStore:
    return ArtifactStore(f"file://{tmp_path / 'store'}")


def _save(job_dir: Path, relative: str, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = job_dir / relative / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _stored(store, job_dir: Path, relative: str, step: int, files: dict[str, bytes]) -> str:
    """A checkpoint as a run left it: written into `job_dir`, uploaded and sealed; its key."""
    _save(job_dir, relative, files)
    key = store.new_checkpoint_key("ten", "job", step)
    upload_checkpoint(store.uri, str(job_dir), relative, key, step)
    return key


def _files(root: Path) -> dict[str, str]:
    """sha256 of every file under `root`, by relative name (hidden leftovers included)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


WEIGHTS = {"policy.safetensors": os.urandom(200_000), "trainer_state.json": b'{"step": 6}'}
NESTED = {**WEIGHTS, "sub/optimizer.pt": os.urandom(5_000)}


def test_the_newest_complete_checkpoint_goes_back_where_the_job_left_it(store, tmp_path):
    old = _stored(store, tmp_path / "node1", "output/checkpoints/step-000003", 3, WEIGHTS)
    new = _stored(store, tmp_path / "node1", STEP_DIR, 6, NESTED)
    fresh = tmp_path / "node2" / "job"
    fresh.mkdir(parents=True)
    restored, skipped = restore_latest(store.uri, str(fresh), [new, old])
    assert skipped == []
    assert (restored.key, restored.source, restored.step, restored.files) == (new, STEP_DIR, 6, 3)
    assert restored.downloaded and restored.bytes == sum(map(len, NESTED.values()))
    assert _files(fresh / STEP_DIR) == _files(tmp_path / "node1" / STEP_DIR)
    assert not (fresh / "output/checkpoints/step-000003").exists()  # the newest only


def test_a_checkpoint_without_its_manifest_is_never_restored(store, tmp_path):
    """An upload that never finished: its files are in the store, its manifest is not."""
    old = _stored(store, tmp_path / "node1", "output/checkpoints/step-000003", 3, WEIGHTS)
    new = _stored(store, tmp_path / "node1", STEP_DIR, 6, NESTED)
    store.fs.rm_file(f"{store.root}/{new}/{MANIFEST}")
    fresh = tmp_path / "job"
    fresh.mkdir()
    restored, skipped = restore_latest(store.uri, str(fresh), [new, old])
    assert restored.key == old and restored.step == 3
    assert skipped == [f"{new}: no manifest (its upload never finished)"]
    assert sorted(_files(fresh)) == [f"output/checkpoints/step-000003/{n}" for n in sorted(WEIGHTS)]


def test_a_checkpoint_whose_bytes_do_not_match_its_manifest_is_never_restored(store, tmp_path):
    old = _stored(store, tmp_path / "node1", "output/checkpoints/step-000003", 3, WEIGHTS)
    new = _stored(store, tmp_path / "node1", STEP_DIR, 6, NESTED)
    stored_file = Path(store.root) / new / "files" / "sub" / "optimizer.pt"
    stored_file.write_bytes(b"\0" + stored_file.read_bytes()[1:])  # same size, one byte off
    fresh = tmp_path / "job"
    fresh.mkdir()
    restored, skipped = restore_latest(store.uri, str(fresh), [new, old])
    assert restored.key == old
    assert len(skipped) == 1 and "sub/optimizer.pt: 5000 bytes with sha256" in skipped[0]
    # nothing of the bad one in place, and no staging directory left behind
    assert sorted(_files(fresh)) == [f"output/checkpoints/step-000003/{n}" for n in sorted(WEIGHTS)]
    assert os.listdir(fresh / "output" / "checkpoints") == ["step-000003"]


def test_nothing_restorable_restores_nothing(store, tmp_path):
    key = _stored(store, tmp_path / "node1", STEP_DIR, 6, WEIGHTS)
    store.fs.rm_file(f"{store.root}/{key}/{MANIFEST}")
    fresh = tmp_path / "job"
    fresh.mkdir()
    assert restore_latest(store.uri, str(fresh), [key]) == (
        None,
        [f"{key}: no manifest (its upload never finished)"],
    )
    assert restore_latest(store.uri, str(fresh), []) == (None, [])
    assert _files(fresh) == {}


def test_a_job_directory_that_holds_it_byte_for_byte_downloads_nothing(store, tmp_path):
    """The same node again: checked by sha256, not by name. A same-named copy that differs is
    replaced by the stored one."""
    job = tmp_path / "job"
    key = _stored(store, job, STEP_DIR, 6, NESTED)
    before = {p: p.stat().st_mtime_ns for p in (job / STEP_DIR).rglob("*")}
    restored, _ = restore_latest(store.uri, str(job), [key])
    assert not restored.downloaded
    assert {p: p.stat().st_mtime_ns for p in (job / STEP_DIR).rglob("*")} == before

    (job / STEP_DIR / "policy.safetensors").write_bytes(os.urandom(200_000))  # same name and size
    (job / STEP_DIR / "sub" / "optimizer.pt").unlink()
    restored, _ = restore_latest(store.uri, str(job), [key])
    assert restored.downloaded
    assert _files(job / STEP_DIR) == {
        name: hashlib.sha256(data).hexdigest() for name, data in NESTED.items()
    }
    assert sorted(os.listdir(job / "output" / "checkpoints")) == ["step-000006"]


def test_a_single_file_checkpoint_goes_back_as_a_file(store, tmp_path):
    key = _stored(store, tmp_path / "node1", "output", 4, {"weights-4": b"0.42"})
    store_key = store.new_checkpoint_key("ten", "job", 5)
    upload_checkpoint(store.uri, str(tmp_path / "node1"), "output/weights-4", store_key, 5)
    fresh = tmp_path / "job"
    fresh.mkdir()
    restored, _ = restore_latest(store.uri, str(fresh), [store_key, key])
    assert restored.source == "output/weights-4"
    assert (fresh / "output" / "weights-4").read_bytes() == b"0.42"
    assert _files(fresh) == {"output/weights-4": hashlib.sha256(b"0.42").hexdigest()}


def test_links_a_job_planted_are_never_followed(store, tmp_path):
    """Root restores into a directory a hostile job wrote: a link at the checkpoint's own path is
    replaced, not written through; a link where a directory should be stops that restore."""
    key = _stored(store, tmp_path / "node1", STEP_DIR, 6, WEIGHTS)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("mine")

    job = tmp_path / "job"
    (job / "output" / "checkpoints").mkdir(parents=True)
    (job / STEP_DIR).symlink_to(outside)
    restored, _ = restore_latest(store.uri, str(job), [key])
    assert restored.downloaded and not (job / STEP_DIR).is_symlink()
    assert os.listdir(outside) == ["keep"] and (outside / "keep").read_text() == "mine"

    other = tmp_path / "other"
    (other / "output").mkdir(parents=True)
    (other / "output" / "checkpoints").symlink_to(outside)
    restored, skipped = restore_latest(store.uri, str(other), [key])
    assert restored is None and "'checkpoints' is not a directory it can use" in skipped[0]
    assert os.listdir(outside) == ["keep"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_what_it_restores_belongs_to_the_job(store, tmp_path):
    key = _stored(store, tmp_path / "node1", STEP_DIR, 6, NESTED)
    job = tmp_path / "job"
    job.mkdir()
    uid = 2_000_000_123
    restore_latest(store.uri, str(job), [key], owner=uid)
    made = [job / "output", *(job / "output").rglob("*")]
    assert {(p.stat().st_uid, p.stat().st_gid) for p in made} == {(uid, uid)}


def test_a_new_attempt_finds_its_checkpoint_in_its_nodes_own_root(store, tmp_path, monkeypatch):
    """The run's actor (JobProcess, here without Ray) on a node whose `ray start` set
    RLGUARD_JOBS_ROOT: the job's directory is made there and the stored checkpoint is in it
    before the job's process starts; nothing lands in the server's default root."""
    key = _stored(store, tmp_path / "node1", "output", 4, {"weights-4": b"0.42"})
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "node2"))
    home = JobHome("job-1", str(tmp_path / "data" / "jobs"), store_uri=store.uri, restore=(key,))
    job = 'cat output/weights-4 > seen; echo "$RLGUARD_OUTPUT_DIR" > where'
    run = JobProcess(["bash", "-c", job], {}, home, str(tmp_path / "attempt-2.log"))
    assert "output (step 4, 1 files, 4 bytes) restored from the store" in run.started()["restored"]
    assert run.wait().code == 0
    job_dir = tmp_path / "node2" / "job-1"
    assert (job_dir / "seen").read_bytes() == b"0.42"
    assert (job_dir / "where").read_text().strip() == str(job_dir / "output")
    assert "rlguard: starts from output (step 4" in (tmp_path / "attempt-2.log").read_text()
    assert not (tmp_path / "data").exists()


def test_a_nodes_root_must_be_absolute(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, "jobs")
    home = JobHome("job-1", str(tmp_path / "data" / "jobs"))
    run = JobProcess(["true"], {}, home, str(tmp_path / "attempt-1.log"))
    with pytest.raises(InputError, match="RLGUARD_JOBS_ROOT: must be an absolute path"):
        run.started()
    assert "could not start: RLGUARD_JOBS_ROOT: must be" in (tmp_path / "attempt-1.log").read_text()
