"""`rlguard lab overoptimization`: bad options are one line and exit 2, before any work."""

import pytest

from cli_runner import cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "0"], "--seeds"),
        (["--methods", "ppo,sgd"], "unknown name 'sgd'"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_bad_options_fail_in_one_line(monkeypatch, capsys, tmp_path, args, message):
    code, _, err = cli(
        monkeypatch, capsys, "lab", "overoptimization", "--out", str(tmp_path / "lab"), *args
    )
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "lab").exists()


def test_an_out_path_that_is_a_file_is_refused(monkeypatch, capsys, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("not a directory")
    code, _, err = cli(monkeypatch, capsys, "lab", "overoptimization", "--out", str(taken))
    assert code == 2 and "--out" in err and str(taken) in err
