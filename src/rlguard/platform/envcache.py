"""Jobs' Python environments on a node: each built once per hash (jobenv.py), cached, evicted
least recently used past the operator's size limit.

Built outside the sandbox, as root, by uv: a virtualenv of the platform's interpreter
(`uv venv`) and the job's exact pins installed into it wheels only (`uv pip install --no-deps
--no-build`: no package code runs), then mounted read-only in the job's view with its `bin` first
on the job's PATH. With the `rlguard` base, a `.pth` file puts the platform's site-packages
behind the environment's own, so a job's pin wins. The environment is complete once its marker
file is written (last); a build that died leaves none and is redone.

A lock file per environment: held exclusively while it is built, shared by every run that uses
it for the run's whole life, so eviction (which takes it exclusively, without waiting) never
removes an environment a job is running in. Installs copy files (`--link-mode copy`, no uv
cache): an environment is self-contained, its size is what the limit counts, and nothing else
grows.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import site
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from uv import find_uv_bin

from rlguard.io import write_text
from rlguard.platform.jobenv import Environment, uv_env, uv_message

MARKER = ".rlguard-env.json"
BUILD_TIMEOUT_S = 1800.0
BASE_PTH = "_rlguard_base.pth"


ENVS = "envs"
"""Under a node's directory of the platform's own files (jobhome.volume_base): the cache."""


@dataclass(frozen=True)
class JobPython:
    """What the server tells a run's actor of the job's environment (jobenv.Environment's dict)
    and how large each node's cache may grow."""

    environment: dict[str, Any]
    cache_mb: int


class EnvBuildFailed(RuntimeError):
    """uv could not build a job's environment on this node: its message."""


@dataclass
class Held:
    """An environment a run uses: its directory, whether this run built it, and how long that
    took (or finding it did); `release` when the run ends."""

    path: Path
    built: bool
    seconds: float
    lock: IO[str]

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def release(self) -> None:
        self.lock.close()  # and with it the shared lock


def _tree_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


class EnvCache:
    def __init__(self, root: Path, limit_bytes: int) -> None:
        self.root, self.limit_bytes = root, limit_bytes

    def ensure(self, env: Environment) -> Held:
        """The environment, built here first if this node has none complete; held shared."""
        self.root.mkdir(mode=0o755, parents=True, exist_ok=True)
        path = self.root / env.hash
        lock = open(self.root / f"{env.hash}.lock", "a")  # noqa: SIM115 (held: Held.release)
        try:
            start = time.monotonic()
            fcntl.flock(lock, fcntl.LOCK_EX)
            built = not (path / MARKER).is_file()
            if built:
                self._build(env, path)
            os.utime(path / MARKER)  # most recently used
            fcntl.flock(lock, fcntl.LOCK_SH)
            held = Held(path, built, round(time.monotonic() - start, 3), lock)
        except BaseException:
            lock.close()
            raise
        self.evict(keep=env.hash)
        return held

    def _build(self, env: Environment, path: Path) -> None:
        if path.exists():  # a build that died before its marker
            shutil.rmtree(path)
        uv = find_uv_bin()
        python = path / "bin" / "python"
        try:
            self._uv([uv, "venv", "--quiet", "--python", sys.executable, str(path)], None)
            install = [uv, "pip", "install", "--quiet", "--python", str(python), "--no-deps"]
            install += ["--no-build", "--no-cache", "--link-mode", "copy", *env.index.args()]
            self._uv([*install, "-r", "-"], "\n".join(env.packages))
            if env.base == "rlguard":
                self._base_pth(python)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        marker = {**env.as_dict(), "bytes": _tree_bytes(path), "built_at": time.time()}
        write_text(path / MARKER, json.dumps(marker))

    @staticmethod
    def _uv(argv: list[str], stdin: str | None) -> None:
        try:
            done = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                text=True,
                env=uv_env(),
                timeout=BUILD_TIMEOUT_S,
                cwd="/",
            )
        except subprocess.TimeoutExpired:
            raise EnvBuildFailed(f"not built in {BUILD_TIMEOUT_S:.0f} s") from None
        if done.returncode != 0:
            raise EnvBuildFailed(uv_message(done.stderr))

    @staticmethod
    def _base_pth(python: Path) -> None:
        """The platform's site-packages behind the environment's own (`site.addsitedir`, so
        their own .pth files, an editable install's among them, are read too)."""
        asked = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        )
        lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]
        (Path(asked.stdout.strip()) / BASE_PTH).write_text("\n".join(lines) + "\n")

    def evict(self, keep: str) -> list[str]:
        """Remove least recently used environments no run holds until the rest fit the limit;
        the hashes removed."""
        found = []
        for marker in self.root.glob(f"*/{MARKER}"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                size = json.loads(marker.read_text())["bytes"]
                found.append((marker.stat().st_mtime, marker.parent, size))
        total = sum(size for _, _, size in found)
        removed = []
        for _, path, size in sorted(found):
            if total <= self.limit_bytes:
                break
            if path.name == keep:
                continue
            with open(self.root / f"{path.name}.lock", "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a run holds it
                (path / MARKER).unlink(missing_ok=True)  # incomplete from here on
                shutil.rmtree(path, ignore_errors=True)
            total -= size
            removed.append(path.name)
        return removed
