"""A fine-tuned model's stored checkpoint made a local directory (weights.py): put back whole
and checked, reused once there, refused over the size limit or when it is not a complete model
directory, with nothing half-made left in the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.finetune.weights import (
    WeightsTooLarge,
    WeightsUnavailable,
    cached_path,
    local_weights,
)
from rlguard.platform.uploader import upload_checkpoint

FILES = {"config.json": b'{"model_type": "llama"}', "weights/model.safetensors": b"w" * 1000}


def deposit(tmp_path: Path, store: ArtifactStore, reported: str = "output/final") -> str:
    """A checkpoint of FILES uploaded as a job's node does; its key."""
    job_dir = tmp_path / "job"
    for name, data in FILES.items():
        (job_dir / reported / name).parent.mkdir(parents=True, exist_ok=True)
        (job_dir / reported / name).write_bytes(data)
    key = ArtifactStore.new_checkpoint_key("tenant-1", "job-1", 5)
    upload_checkpoint(store.uri, str(job_dir), reported, key, 5)
    return key


def contents(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(str(tmp_path / "artifacts"))


def test_a_checkpoint_is_put_back_whole_then_reused(tmp_path: Path, store: ArtifactStore) -> None:
    key = deposit(tmp_path, store)
    cache = tmp_path / "cache"
    local = local_weights(store, key, cache)
    assert local == cached_path(key, cache) and contents(local) == FILES
    assert [p.name for p in cache.iterdir()] == [local.name]  # no staging left behind
    store.remove(key)  # from now on only the cache has it
    assert local_weights(store, key, cache) == local and contents(local) == FILES


def test_a_checkpoint_over_the_limit_is_refused_before_download(
    tmp_path: Path, store: ArtifactStore
) -> None:
    key = deposit(tmp_path, store)
    total = sum(len(d) for d in FILES.values())
    with pytest.raises(WeightsTooLarge, match=f"{total} bytes, over this server's limit of 100"):
        local_weights(store, key, tmp_path / "cache", max_bytes=100)
    assert not (tmp_path / "cache").exists()
    assert local_weights(store, key, tmp_path / "cache", max_bytes=total).is_dir()


def test_an_unfinished_upload_or_a_single_file_is_unavailable(
    tmp_path: Path, store: ArtifactStore
) -> None:
    with pytest.raises(WeightsUnavailable, match="never finished"):
        local_weights(store, "tenant-1/job-1/checkpoints/step-1-0000", tmp_path / "cache")
    (tmp_path / "job" / "output").mkdir(parents=True)
    (tmp_path / "job" / "output" / "model.bin").write_bytes(b"x")
    key = ArtifactStore.new_checkpoint_key("tenant-1", "job-1", 2)
    upload_checkpoint(store.uri, str(tmp_path / "job"), "output/model.bin", key, 2)
    with pytest.raises(WeightsUnavailable, match="a single file, not a model directory"):
        local_weights(store, key, tmp_path / "cache")


def test_a_file_that_does_not_match_its_manifest_leaves_nothing(
    tmp_path: Path, store: ArtifactStore
) -> None:
    key = deposit(tmp_path, store)
    stored = tmp_path / "artifacts" / key / "files" / "weights" / "model.safetensors"
    stored.write_bytes(b"tampered")
    cache = tmp_path / "cache"
    with pytest.raises(WeightsUnavailable, match=r"model\.safetensors: 8 bytes"):
        local_weights(store, key, cache)
    assert list(cache.iterdir()) == []
