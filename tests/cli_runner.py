"""Run `rlguard ARGS` in-process for tests: (exit code, stdout, stderr)."""

from __future__ import annotations

import sys

import pytest

from rlguard.cli import main


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rlguard", *args])
    with pytest.raises(SystemExit) as info:
        main()
    captured = capsys.readouterr()
    code = info.value.code
    return (0 if code is None else int(code)), captured.out, captured.err


def one_line_exit_2(code: int, out: str, err: str, *needles: str) -> None:
    """The CLI's answer to bad input: nothing on stdout, one line on stderr, exit 2."""
    assert code == 2 and out == ""
    assert err.startswith("error:") and err.count("\n") == 1
    for needle in needles:
        assert needle in err
