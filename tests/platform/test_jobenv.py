"""Jobs' Python environments: requirements checked, resolved by uv against the operator's index
(here a directory of wheels the test makes), built once per hash and evicted least recently used
unless a run holds them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from wheels import wheel_index

from rlguard.errors import InputError
from rlguard.platform.envcache import MARKER, EnvCache
from rlguard.platform.jobenv import (
    PackageIndex,
    ResolveFailed,
    Software,
    read_requirements,
    requirement_lines,
    resolve,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> PackageIndex:
    return PackageIndex("none", (str(wheel_index(tmp_path_factory.mktemp("wheels"))),))


def _python(env: Path, code: str) -> str:
    done = subprocess.run(
        [str(env / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_requirement_lines_drop_comments_and_name_a_bad_line() -> None:
    assert requirement_lines(["# deps", "", "tinypkg==1.0  # pinned", "tinyapp"]) == [
        "tinypkg==1.0",
        "tinyapp",
    ]
    for line, said in [
        ("tinypkg ==", "line 1 .*not a requirement"),
        ("-e .", "options are the operator's"),
        ("--index-url http://evil", "options are the operator's"),
        ("tinypkg @ file:///etc/passwd", "a URL or path"),
        ("evil @ https://example.invalid/x.whl", "a URL or path"),
    ]:
        with pytest.raises(ValueError, match=said):
            requirement_lines([line])


def test_a_requirements_file_that_is_not_one_is_one_line_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "requirements.txt"
    bad.write_text("tinypkg==1.0\nthis is not a requirement\n")
    with pytest.raises(InputError, match=r"option --requirements: .*requirements.txt: line 2"):
        read_requirements(bad)
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(InputError, match=r"model\.bin"):
        read_requirements(binary)


def test_an_unknown_base_is_refused() -> None:
    with pytest.raises(InputError, match="--job-env-base"):
        Software(base="conda")


def test_resolve_pins_the_whole_set(index: PackageIndex) -> None:
    env = resolve(["tinyapp"], "rlguard", index)
    assert sorted(env.packages) == ["tinyapp==1.0", "tinypkg==1.0"]
    assert resolve(["tinypkg==2.0"], "rlguard", index).hash != env.hash


def test_an_unresolvable_set_fails_with_uvs_message(index: PackageIndex) -> None:
    with pytest.raises(ResolveFailed, match="tinypkg"):
        resolve(["tinypkg==3.0"], "rlguard", index)
    with pytest.raises(ResolveFailed, match="unsatisfiable"):
        resolve(["tinyapp", "tinypkg==2.0"], "rlguard", index)


def test_an_environment_is_built_once_and_layers_over_the_platforms(
    index: PackageIndex, tmp_path: Path
) -> None:
    cache = EnvCache(tmp_path / "envs", 1 << 30)
    env = resolve(["tinypkg==2.0", "packaging==1.0"], "rlguard", index)
    first = cache.ensure(env)
    first.release()
    again = cache.ensure(env)
    again.release()
    assert first.built and not again.built and again.path == first.path
    said = _python(
        first.path,
        "import tinypkg, packaging, yaml; print(tinypkg.__version__, packaging.__version__)",
    )
    assert said == "2.0 1.0"  # its own packaging wins over the platform's; yaml is the base's


def test_with_no_base_only_its_own_packages_import(index: PackageIndex, tmp_path: Path) -> None:
    held = EnvCache(tmp_path / "envs", 1 << 30).ensure(resolve(["tinypkg"], "none", index))
    held.release()
    said = _python(
        held.path, "import tinypkg\ntry:\n import yaml\nexcept ImportError:\n print('no yaml')"
    )
    assert said == "no yaml"


def test_eviction_removes_the_least_recently_used_that_no_run_holds(
    index: PackageIndex, tmp_path: Path
) -> None:
    cache = EnvCache(tmp_path / "envs", 1 << 30)
    held = cache.ensure(resolve(["tinypkg==1.0"], "none", index))  # held: a run uses it
    old = cache.ensure(resolve(["tinypkg==2.0"], "none", index))
    old.release()
    size = json.loads((old.path / MARKER).read_text())["bytes"]
    cache.limit_bytes = size  # room for one
    newest = cache.ensure(resolve(["tinyapp"], "none", index))
    assert held.path.is_dir() and newest.path.is_dir()  # held, and the one just built
    assert not old.path.exists()
    held.release()
    newest.release()
    assert cache.evict(keep=newest.path.name) == [held.path.name]
