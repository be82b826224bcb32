"""Tiny wheels made on the spot: a local package index (`--find-links`) for the tests of jobs'
environments, since nothing is downloaded here. Each package is one module saying its version."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(directory: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """`name-version-py3-none-any.whl` in `directory`: `import name; name.__version__`."""
    dist = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": f"__version__ = {version!r}\n".encode(),
        f"{dist}/METADATA": metadata.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: rlguard-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
    return path


def wheel_index(directory: Path) -> Path:
    """The tests' index: tinypkg 1.0 and 2.0, tinyapp 1.0 (needs tinypkg<2), and a `packaging`
    1.0 that conflicts with the platform's own."""
    make_wheel(directory, "tinypkg", "1.0")
    make_wheel(directory, "tinypkg", "2.0")
    make_wheel(directory, "tinyapp", "1.0", ("tinypkg<2",))
    make_wheel(directory, "packaging", "1.0")
    return directory
