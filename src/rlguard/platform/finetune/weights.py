"""A fine-tuned model's stored checkpoint as a local Hugging Face directory the server can load
(`/v1/chat/completions` of an `ft:...` model).

The checkpoint is put back by restore.py (every file checked against its manifest's size and
sha256, nothing followed out of the staging directory) under a temporary name in the cache, then
renamed into place, so a directory in the cache is always whole; two requests racing for the
same checkpoint both download and the second rename loses, harmlessly. A key names one upload
for good (artifacts.py: a fresh key per upload), so a cached copy never goes stale. A checkpoint
over `max_bytes` is refused before a byte is read. Nothing is evicted yet: the cache grows by
the fine-tuned models that are used.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from rlguard.platform.artifacts import ArtifactStore, StoreUnavailable
from rlguard.platform.restore import NotRestorable, restore

MAX_BYTES = 16 << 30


class WeightsUnavailable(Exception):
    """The checkpoint cannot be served now (why, in one line)."""


class WeightsTooLarge(WeightsUnavailable):
    """The checkpoint is over the server's limit for serving."""


def cached_path(key: str, cache_root: Path) -> Path:
    return cache_root / hashlib.sha256(key.encode()).hexdigest()[:32]


def local_weights(
    store: ArtifactStore, key: str, cache_root: Path, max_bytes: int = MAX_BYTES
) -> Path:
    """The directory holding the checkpoint stored at `key`, downloaded into `cache_root` unless
    already there."""
    target = cached_path(key, cache_root)
    if target.is_dir():
        return target
    try:
        manifest = store.manifest(key)
    except StoreUnavailable as e:
        raise WeightsUnavailable(f"the artifact store did not answer: {e}") from None
    if manifest is None:
        raise WeightsUnavailable("its upload never finished (no manifest)")
    if manifest.get("kind") == "file":
        raise WeightsUnavailable("it is a single file, not a model directory")
    if manifest["bytes"] > max_bytes:
        raise WeightsTooLarge(
            f"it is {manifest['bytes']} bytes, over this server's limit of {max_bytes} for serving"
        )
    cache_root.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache_root))
    try:
        try:
            placed = staging / restore(store, str(staging), key, None).source
        except NotRestorable as e:
            raise WeightsUnavailable(str(e)) from None
        if not placed.is_dir():
            raise WeightsUnavailable("it is a single file, not a model directory")
        try:
            os.rename(placed, target)
        except OSError:
            if not target.is_dir():  # not another request's copy, renamed first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
