"""A working directory's zip: packed the same every time, hostile archives refused, laid out
without following what an earlier attempt planted."""

from __future__ import annotations

import io
import os
import stat
import zipfile
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.platform import workdir

CAP = 1 << 20


def _tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('hi')\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (root / "data").mkdir()
    (root / "data" / "big.bin").write_bytes(b"x" * 100)
    (root / ".gitignore").write_text("data/\n")
    (root / "notes.tmp").write_text("scratch\n")
    return root


def _names(data: bytes) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def _zip(entries: list[tuple[str, bytes, int]]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            archive.writestr(info, data)
    buffer.seek(0)
    return buffer


def test_the_pack_leaves_out_git_caches_gitignored_and_excluded_files(tmp_path: Path) -> None:
    data = workdir.pack(_tree(tmp_path / "src"), ("*.tmp",))
    assert _names(data) == [".gitignore", "pkg/mod.py", "run.sh", "train.py"]


def test_the_same_tree_is_the_same_bytes_whatever_its_times(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    first = workdir.pack(root)
    os.utime(root / "train.py", (1, 1))
    assert workdir.pack(root) == first
    (root / "train.py").write_text("print('changed')\n")
    assert workdir.pack(root) != first


def test_the_pack_refuses_links_and_a_tree_over_the_cap(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src")
    (root / "secret").symlink_to("/etc/shadow")
    with pytest.raises(InputError, match="secret is a link"):
        workdir.pack(root)
    (root / "secret").unlink()
    with pytest.raises(InputError, match="holds over 10 bytes"):
        workdir.pack(root, max_bytes=10)


def test_check_takes_a_packed_tree(tmp_path: Path) -> None:
    data = workdir.pack(_tree(tmp_path / "src"))
    archive = workdir.check(io.BytesIO(data), CAP)
    assert archive.files == 5 and archive.bytes > 0 and archive.id.startswith("sha256:")


@pytest.mark.parametrize(
    ("entries", "said"),
    [
        ([("../escape.py", b"x", 0o100644)], "not a relative path"),
        ([("/etc/cron.d/x", b"x", 0o100644)], "not a relative path"),
        ([("a//b.py", b"x", 0o100644)], "not a relative path"),
        ([("link", b"/etc/shadow", stat.S_IFLNK | 0o777)], "link is a link"),
        ([("fifo", b"", stat.S_IFIFO | 0o644)], "not a regular file"),
        ([("dir/", b"", stat.S_IFDIR | 0o755), ("dir", b"", 0o100644)], "twice"),
        ([("a.py", b"1", 0o100644), ("a.py", b"2", 0o100644)], "twice"),
        ([("a", b"1", 0o100644), ("a/b.py", b"2", 0o100644)], "twice"),
        ([("big.bin", b"x" * (CAP + 1), 0o100644)], "over 1048576 bytes unpacked"),
    ],
)
def test_check_refuses_a_hostile_archive(entries: list, said: str) -> None:
    with pytest.raises(workdir.BadArchive, match=said):
        workdir.check(_zip(entries), CAP)


def test_directory_entries_as_zip_tools_write_them_are_taken(tmp_path: Path) -> None:
    entries = [("pkg/", b"", stat.S_IFDIR | 0o755), ("pkg/a.py", b"A", 0o100644)]
    entries.append(("empty/", b"", stat.S_IFDIR | 0o755))
    assert workdir.check(_zip(entries), CAP).files == 3
    job = tmp_path / "job"
    job.mkdir()
    workdir.lay_out(_zip(entries), job, None)
    assert (job / "pkg" / "a.py").read_text() == "A" and (job / "empty").is_dir()


def test_check_refuses_what_is_not_a_zip_or_is_corrupt() -> None:
    with pytest.raises(workdir.BadArchive, match="not a zip"):
        workdir.check(io.BytesIO(b"not a zip at all"), CAP)
    good = _zip([("a.txt", b"hello world " * 100, 0o100644)]).getvalue()
    at = good.index(b"hello")
    corrupt = good[:at] + b"J" + good[at + 1 :]
    with pytest.raises(workdir.BadArchive, match="not a zip"):
        workdir.check(io.BytesIO(corrupt), CAP)


def test_lay_out_writes_the_files_with_their_modes(tmp_path: Path) -> None:
    data = workdir.pack(_tree(tmp_path / "src"))
    job = tmp_path / "job"
    job.mkdir()
    written = workdir.lay_out(io.BytesIO(data), job, None)
    assert (job / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert os.access(job / "run.sh", os.X_OK) and not os.access(job / "train.py", os.X_OK)
    assert written == sum(p.stat().st_size for p in job.rglob("*") if p.is_file())


def test_lay_out_replaces_what_an_earlier_attempt_planted_never_following_it(
    tmp_path: Path,
) -> None:
    data = workdir.pack(_tree(tmp_path / "src"))
    job, outside = tmp_path / "job", tmp_path / "outside"
    job.mkdir()
    outside.mkdir()
    (outside / "victim").write_text("keep me\n")
    (job / "train.py").symlink_to(outside / "victim")  # a link at a file's name
    (job / "pkg").symlink_to(outside)  # a link at a directory's name
    (job / "run.sh").mkdir()  # a directory at a file's name
    (job / "run.sh" / "inner").write_text("x")
    (job / "output.txt").write_text("the job's own\n")
    workdir.lay_out(io.BytesIO(data), job, None)
    assert (outside / "victim").read_text() == "keep me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert not (job / "train.py").is_symlink() and (job / "train.py").read_text() == "print('hi')\n"
    assert (job / "pkg").is_dir() and not (job / "pkg").is_symlink()
    assert (job / "run.sh").is_file()
    assert (job / "output.txt").read_text() == "the job's own\n"  # not the archive's: kept


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_lay_out_hands_the_files_to_the_jobs_uid(tmp_path: Path) -> None:
    data = workdir.pack(_tree(tmp_path / "src"))
    job = tmp_path / "job"
    job.mkdir()
    workdir.lay_out(io.BytesIO(data), job, 2_000_000_123)
    owners = {p.stat().st_uid for p in job.rglob("*")}
    assert owners == {2_000_000_123}
