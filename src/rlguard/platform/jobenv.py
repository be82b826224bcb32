"""A job's Python environment: the packages it names, resolved once at submission.

A command job may list requirements (`rlguard jobs submit --requirements FILE`, the API's
`requirements`): PEP 508 lines, checked here (no options, no URLs or paths: the platform
builds with the operator's index only). The server resolves them with uv (`uv pip compile`,
wheels only: `--no-build`, so no package's build code ever runs outside a sandbox) against the
operator's index and the platform's interpreter, within RESOLVE_TIMEOUT_S; an unresolvable set
fails the job before it is queued, with uv's message. What resolved (exact pins) is the job's
`Environment`: its hash names the environment each node builds once and caches (envcache.py),
and every attempt gets the same packages.

On top of the pins, the operator's base (`rlguard serve --job-env-base`): `rlguard`, the
platform's own packages behind the job's (a job's pin wins over the platform's copy), or
`none`, the interpreter's standard library alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from uv import find_uv_bin

from rlguard.errors import InputError

BASES = ("rlguard", "none")
MAX_REQUIREMENTS = 200
RESOLVE_TIMEOUT_S = 120.0
MAX_MESSAGE = 2000
RESOLVERS = threading.BoundedSemaphore(2)
"""Resolutions one server runs at once (each a uv process); more submissions wait their turn."""


class ResolveFailed(RuntimeError):
    """uv could not resolve a job's requirements: its message."""


@dataclass(frozen=True)
class PackageIndex:
    """Where jobs' packages come from: the operator's choice (`--package-index`, `--find-links`);
    `url` None is uv's default (PyPI), "none" no index (only `find_links`)."""

    url: str | None = None
    find_links: tuple[str, ...] = ()

    def args(self) -> list[str]:
        args = [a for link in self.find_links for a in ("--find-links", link)]
        if self.url == "none":
            return [*args, "--no-index"]
        return [*args, "--default-index", self.url] if self.url else args


@dataclass(frozen=True)
class Environment:
    """What a job's environment holds: exact pins on a base, built with one index."""

    packages: tuple[str, ...]
    base: str
    index: PackageIndex = field(default_factory=PackageIndex)

    @property
    def hash(self) -> str:
        """The cache's name for it: the same pins on the same interpreter and base are one
        environment, whichever job asked."""
        key = {
            "python": sys.version,
            "base": self.base,
            "packages": sorted(self.packages),
            "index": self.index.args(),
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]

    def as_dict(self) -> dict[str, Any]:
        return {
            "packages": list(self.packages),
            "base": self.base,
            "index": {"url": self.index.url, "find_links": list(self.index.find_links)},
            "hash": self.hash,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Environment:
        index = PackageIndex(data["index"]["url"], tuple(data["index"]["find_links"]))
        return cls(tuple(data["packages"]), data["base"], index)


def requirement_lines(lines: list[str]) -> list[str]:
    """Each requirement as written (comments and blank lines dropped), or ValueError naming the
    line and what is wrong with it."""
    found = []
    for number, raw in enumerate(lines, 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        at = f"line {number} ({line[:100]!r})"
        if line.startswith("-"):
            raise ValueError(f"{at}: options are the operator's (--package-index), not a job's")
        try:
            requirement = Requirement(line)
        except InvalidRequirement as e:
            raise ValueError(f"{at}: not a requirement: {str(e).splitlines()[0]}") from None
        if requirement.url:
            raise ValueError(f"{at}: a URL or path; name a package from the platform's index")
        found.append(str(requirement))
    if len(found) > MAX_REQUIREMENTS:
        raise ValueError(f"{len(found)} requirements, over the limit of {MAX_REQUIREMENTS}")
    return found


def read_requirements(path: Path) -> list[str]:
    """A requirements file (`--requirements`), checked as `requirement_lines` checks it."""
    try:
        return requirement_lines(path.read_text().splitlines())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(f"option --requirements: {path}: {e}") from None


def uv_env() -> dict[str, str]:
    """uv's environment: no user or project configuration, no Python downloads, no colours."""
    keep = ("PATH", "HOME", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "HTTP_PROXY")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return {**env, "UV_NO_CONFIG": "1", "UV_PYTHON_DOWNLOADS": "never", "NO_COLOR": "1"}


def uv_message(stderr: str) -> str:
    return stderr.strip()[-MAX_MESSAGE:] or "uv failed without a message"


def resolve(requirements: list[str], base: str, index: PackageIndex) -> Environment:
    """The exact pins of `requirements` (ResolveFailed with uv's message)."""
    with RESOLVERS, tempfile.TemporaryDirectory(prefix="rlguard-resolve-") as scratch:
        argv = [
            find_uv_bin(),
            "pip",
            "compile",
            "-",
            "--quiet",
            "--no-header",
            "--no-annotate",
            "--no-build",
            "--no-cache",
            "--python",
            sys.executable,
            *index.args(),
        ]
        try:
            done = subprocess.run(
                argv,
                input="\n".join(requirements),
                capture_output=True,
                text=True,
                cwd=scratch,
                env=uv_env(),
                timeout=RESOLVE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise ResolveFailed(f"not resolved in {RESOLVE_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        raise ResolveFailed(uv_message(done.stderr))
    pins = [line.strip() for line in done.stdout.splitlines()]
    return Environment(tuple(p for p in pins if p and not p.startswith("#")), base, index)


@dataclass(frozen=True)
class Software:
    """The operator's terms for what tenants ship: a working directory's cap (packed and
    unpacked), where packages come from, the base under them, each node's cache size, and a
    fine-tuning file's cap (OpenAI's is 512 MB)."""

    working_dir_mb: int = 256
    index: PackageIndex = field(default_factory=PackageIndex)
    base: str = "rlguard"
    cache_mb: int = 20_480
    file_mb: int = 512

    def __post_init__(self) -> None:
        if self.base not in BASES:
            raise InputError(f"option --job-env-base: {self.base!r} is not one of {BASES}")

    @property
    def working_dir_bytes(self) -> int:
        return self.working_dir_mb << 20
