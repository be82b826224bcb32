"""The artifact store: where jobs' checkpoints live, by URI, so any node and the server read them.

A local directory (the default, under the data directory), a shared file system by path
(`file:///...` or a plain path) or S3-compatible object storage (`s3://bucket/prefix`, through
fsspec's s3fs: credentials and `AWS_ENDPOINT_URL` from the environment of the server and its Ray
nodes, never from a job's). Ray Train's `RunConfig(storage_path=URI)` takes the same URIs.

Layout: `ROOT/TENANT/JOB/checkpoints/step-N-NONCE/` holds `files/...` and `manifest.json`. A
checkpoint is uploaded under its own fresh key and its manifest (every file's size and sha256)
is written last, so a key without a manifest is an upload that did not finish: it is never
recorded, listed or served, and goes when its job is deleted. S3 has no rename, so a complete
checkpoint is marked by its manifest rather than moved into place.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import fsspec
from fsspec.implementations.local import LocalFileSystem

from rlguard.errors import InputError

MANIFEST = "manifest.json"
FORMAT = "rlguard-checkpoint/1"
CHUNK = 8 << 20
SCHEMES = ("file", "s3")


class StoreUnavailable(RuntimeError):
    """The store could not be read or written now (a job's report waits and retries)."""


@dataclass(frozen=True)
class StoredCheckpoint:
    """A recorded checkpoint's place: what tenants see, and where its files are."""

    name: str  # its path relative to the job's directory
    key: str | None  # its key in the store (None: pruned by retention since)


@dataclass(frozen=True)
class FileEntry:
    name: str  # relative to the checkpoint, '/'-separated
    size: int
    sha256: str


def _filesystem(uri: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec file system of a store URI and the root inside it."""
    parts = urlsplit(uri)
    scheme = parts.scheme or "file"
    if scheme not in SCHEMES or (scheme == "file" and parts.netloc not in ("", "localhost")):
        raise InputError(
            f"--storage: unknown scheme {scheme!r} in {uri!r} (use a path, file:///PATH or "
            "s3://BUCKET/PREFIX)"
        )
    if scheme == "file":
        return fsspec.filesystem("file"), os.path.abspath(parts.path)
    if not parts.netloc:
        raise InputError(f"--storage: {uri!r} names no bucket (s3://BUCKET/PREFIX)")
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    fs = fsspec.filesystem(
        "s3",
        endpoint_url=endpoint,
        skip_instance_cache=True,
        use_listings_cache=False,  # other processes (the jobs' nodes) write it
        # fail within seconds when the store is away: the job's report is retried anyway
        config_kwargs={"connect_timeout": 5, "read_timeout": 60, "retries": {"max_attempts": 2}},
    )
    return fs, f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")


class ArtifactStore:
    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.fs, self.root = _filesystem(uri)
        self.local = isinstance(self.fs, LocalFileSystem)

    def check(self) -> None:
        """Write, read and remove a probe: `rlguard serve` refuses to start on a store it
        cannot use (InputError, one line)."""
        probe = self._path(f".probe-{secrets.token_hex(4)}")
        try:
            if self.local:
                self.fs.makedirs(self.root, exist_ok=True)
            self.fs.pipe_file(probe, b"ok")
            if self.fs.cat_file(probe) != b"ok":
                raise OSError("a probe read back different bytes")
            self.fs.rm_file(probe)
        except Exception as e:  # botocore, aiohttp and OS errors alike
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise InputError(f"--storage: cannot use {self.uri}: {reason}") from None

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    @staticmethod
    def job_key(tenant_id: str, job_id: str) -> str:
        return f"{tenant_id}/{job_id}"

    @staticmethod
    def working_dir_key(tenant_id: str, sha256: str) -> str:
        """A tenant's working directory (workdir.py), by its content: under the tenant's own
        prefix, so another tenant's job never names it."""
        return f"{tenant_id}/working_dirs/{sha256}.zip"

    @classmethod
    def new_checkpoint_key(cls, tenant_id: str, job_id: str, step: int) -> str:
        """A fresh key for one upload of a checkpoint: never the key of an earlier upload."""
        return f"{cls.job_key(tenant_id, job_id)}/checkpoints/step-{step}-{secrets.token_hex(4)}"

    # ----- writing (the uploader, on the job's node) -------------------------------------------

    def open_file(self, key: str, name: str):  # type: ignore[no-untyped-def]
        """A writable stream for one of a checkpoint's files."""
        path = self._path(f"{key}/files/{name}")
        if self.local:
            self.fs.makedirs(os.path.dirname(path), exist_ok=True)
        return self.fs.open(path, "wb", block_size=CHUNK)

    def seal(
        self, key: str, step: int, source: str, files: list[FileEntry], kind: str = "directory"
    ) -> dict[str, Any]:
        """Write the manifest, last: from now on the checkpoint is complete. `kind`: whether the
        job reported a file or a directory (a restore puts it back as it was)."""
        manifest = {
            "format": FORMAT,
            "step": step,
            "source": source,
            "kind": kind,
            "bytes": sum(f.size for f in files),
            "files": [vars(f) for f in files],
        }
        data = json.dumps(manifest, indent=1).encode()
        final = self._path(f"{key}/{MANIFEST}")
        if self.local:  # a local write is not atomic
            self.fs.pipe_file(final + ".tmp", data)
            self.fs.mv(final + ".tmp", final)
        else:  # an object PUT is
            self.fs.pipe_file(final, data)
        return manifest

    def put(self, key: str, data: bytes) -> None:
        """A small object whole at `key` (a run's log: runlogs.py): written aside and renamed on
        a file system, so a reader never sees half of it; one PUT on S3."""
        path = self._path(key)
        if self.local:
            self.fs.makedirs(os.path.dirname(path), exist_ok=True)
            self.fs.pipe_file(path + ".tmp", data)
            self.fs.mv(path + ".tmp", path)
        else:
            self.fs.pipe_file(path, data)

    def put_file(self, key: str, local: str) -> None:
        """A local file whole at `key`, as `put` writes bytes (a working directory's zip)."""
        path = self._path(key)
        if self.local:
            self.fs.makedirs(os.path.dirname(path), exist_ok=True)
            self.fs.put_file(local, path + ".tmp")
            self.fs.mv(path + ".tmp", path)
        else:
            self.fs.put_file(local, path)

    # ----- reading (the server) ----------------------------------------------------------------

    def get(self, key: str, max_bytes: int) -> bytes | None:
        """The last `max_bytes` of the object at `key` (None: there is none)."""
        path = self._path(key)
        try:
            size = self.fs.size(path)
            return self.fs.cat_file(path, start=max(size - max_bytes, 0))
        except FileNotFoundError:
            return None

    def exists(self, key: str) -> bool:
        try:
            return bool(self.fs.exists(self._path(key)))
        except OSError as e:
            raise StoreUnavailable(str(e)) from e

    def open_object(self, key: str):  # type: ignore[no-untyped-def]
        """The object at `key` to read, seekable (a working directory's zip, on a job's node)."""
        return self.fs.open(self._path(key), "rb", block_size=CHUNK)

    def manifest(self, key: str) -> dict[str, Any] | None:
        """A checkpoint's manifest; None if it is not complete."""
        try:
            return json.loads(self.fs.cat_file(self._path(f"{key}/{MANIFEST}")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise StoreUnavailable(str(e)) from e

    def read(self, key: str, name: str) -> Iterator[bytes]:
        """A checkpoint file's bytes, in chunks (streamed: a checkpoint may be many GB)."""
        with self.fs.open(self._path(f"{key}/files/{name}"), "rb", block_size=CHUNK) as f:
            while chunk := f.read(CHUNK):
                yield chunk

    def remove(self, key: str) -> None:
        """Everything under a key (a checkpoint, or a whole job); nothing there is fine."""
        path = self._path(key)
        try:
            if self.fs.exists(path):
                self.fs.rm(path, recursive=True)
        except FileNotFoundError:
            return
        except OSError as e:
            raise StoreUnavailable(str(e)) from e

    def keys(self, prefix: str) -> list[str]:
        """Every object under a prefix, relative to the store's root (tests, the benchmark)."""
        path = self._path(prefix)
        if not self.fs.exists(path):
            return []
        return sorted(p.removeprefix(self.root + "/") for p in self.fs.find(path))


def default_uri(data_dir: os.PathLike[str] | str) -> str:
    """Embedded, as before: a directory in the platform's data directory."""
    return os.path.join(os.path.abspath(data_dir), "artifacts")
