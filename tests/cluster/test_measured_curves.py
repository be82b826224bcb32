"""The curve file: MeasuredCurve, the round trip, and one strict error line per kind of bad file."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from curve_builders import mixed_curves, write_mixed

from cli_runner import cli
from rlguard.cluster.curve_file import FORMAT, read_curves, write_curves
from rlguard.cluster.curves import HACKING_DROP, MeasuredCurve, turns_over
from rlguard.errors import InputError

# --- MeasuredCurve -------------------------------------------------------------------------------


def test_interpolates_linearly_and_holds_the_ends() -> None:
    curve = MeasuredCurve("a", "ppo", 0, progress=[0.1, 0.5, 1.0], score=[0.2, 0.6, 0.4])
    got = curve(np.array([0.0, 0.1, 0.3, 0.5, 0.75, 1.0]))
    np.testing.assert_allclose(got, [0.2, 0.2, 0.4, 0.6, 0.5, 0.4])


def test_scores_are_clipped_to_the_unit_interval() -> None:
    # Only a curve built in code can hold such scores; the reader rejects them.
    curve = MeasuredCurve("a", "ppo", 0, progress=(0.0, 1.0), score=(-0.5, 1.5))
    np.testing.assert_allclose(curve(np.array([0.0, 0.5, 1.0])), [0.0, 0.5, 1.0])


def test_sequences_become_float_tuples_so_curves_compare_by_value() -> None:
    a = MeasuredCurve("a", "ppo", 0, progress=np.array([0.0, 1.0]), score=[0, 1])
    b = MeasuredCurve("a", "ppo", 0, progress=(0.0, 1.0), score=(0.0, 1.0))
    assert a == b and hash(a) == hash(b)
    assert a.score == (0.0, 1.0) and all(type(v) is float for v in a.score)


def test_the_label_wins_over_the_shape() -> None:
    falls = [0.2, 0.8, 0.2]
    assert MeasuredCurve("a", "ppo", 0, (0.0, 0.5, 1.0), falls, hacking=False).hacks is False
    assert MeasuredCurve("a", "ppo", 0, (0.0, 0.5, 1.0), [0.2, 0.5, 0.8], hacking=True).hacks


@pytest.mark.parametrize(
    ("score", "hacks"),
    [
        ([0.25, 0.75, 0.625], True),  # loses 25% of its 0.5 gain
        ([0.25, 0.75, 0.65], True),  # loses exactly 20%
        ([0.25, 0.75, 0.70], False),  # loses 10%
        ([0.25, 0.5, 0.75], False),  # still rising
        ([0.5, 0.4, 0.1], False),  # never rose: no gain to lose
        ([0.5, 0.5, 0.5], False),
    ],
)
def test_the_derived_label_is_a_fall_of_a_fifth_of_the_gain(score, hacks) -> None:
    assert HACKING_DROP == 0.2
    assert turns_over(score) is hacks
    assert MeasuredCurve("a", "ppo", 0, (0.0, 0.3, 1.0), score).hacks is hacks


def test_proxy_reward_is_measured_or_else_linear() -> None:
    with_proxy = MeasuredCurve("a", "ppo", 0, (0.0, 1.0), (0.4, 0.5), proxy=(1.0, 3.0))
    np.testing.assert_allclose(
        with_proxy.proxy_reward(np.array([0.0, 0.25, 1.0]), 9.0), [1, 1.5, 3]
    )
    without = MeasuredCurve("a", "ppo", 0, (0.0, 1.0), (0.4, 0.5))
    np.testing.assert_allclose(without.proxy_reward(np.array([0.5, 1.0]), 2.0), [1.0, 2.0])


# --- round trip ----------------------------------------------------------------------------------


def test_write_then_read_gives_the_same_curves(tmp_path: Path) -> None:
    curves = mixed_curves(2, 2)
    unlabelled = MeasuredCurve("grpo/seed0", "grpo", 0, (0.0, 0.5, 1.0), (0.3, 0.7, 0.35))
    path = tmp_path / "sub" / "curves.json"
    write_curves(path, [*curves, unlabelled], source="lab overoptimization --quick")
    read = read_curves(path)
    assert read.source == "lab overoptimization --quick"
    assert read.curves == (*curves, unlabelled)
    stored = json.loads(path.read_text())
    assert stored["format"] == FORMAT == "rlguard-curves/1"
    assert set(stored["curves"][-1]) == {"name", "method", "seed", "progress", "score"}
    assert read.curves[-1].hacking is None and read.curves[-1].hacks  # derived on read
    assert not list(tmp_path.glob("sub/.curves*"))  # no temporary left behind


def test_write_refuses_a_curve_the_reader_would_reject(tmp_path: Path) -> None:
    bad = MeasuredCurve("a", "ppo", 0, (0.0, 0.5, 1.0), (0.3, math.nan, 0.4))
    path = tmp_path / "curves.json"
    with pytest.raises(InputError, match=r"curves\[0\]\.score\[1\]"):
        write_curves(path, [bad], source="x")
    assert not path.exists()


# --- validation ----------------------------------------------------------------------------------


def good_document() -> dict:
    return {
        "format": FORMAT,
        "source": "test",
        "curves": [
            {
                "name": "ppo/seed0",
                "method": "ppo",
                "seed": 0,
                "progress": [0.0, 0.25, 0.5, 0.75, 1.0],
                "score": [0.3, 0.5, 0.6, 0.5, 0.35],
                "proxy": [0.0, 0.5, 1.0, 1.5, 2.0],
                "kl": [0.0, 0.1, 0.4, 0.9, 1.6],
                "hacking": True,
            },
            {
                "name": "crpg/seed0",
                "method": "crpg",
                "seed": 0,
                "progress": [0.0, 0.5, 1.0],
                "score": [0.3, 0.5, 0.6],
            },
        ],
    }


def edited(edit: Callable[[dict], object]) -> dict:
    document = copy.deepcopy(good_document())
    edit(document)
    return document


def _set(path: tuple, value: object) -> Callable[[dict], None]:
    def edit(document: dict) -> None:
        target = document
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return edit


def _delete(path: tuple) -> Callable[[dict], None]:
    def edit(document: dict) -> None:
        target = document
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return edit


BAD_DOCUMENTS = {
    "wrong-format": (_set(("format",), "rlguard-curves/2"), ["format:", "'rlguard-curves/2'"]),
    "no-format": (_delete(("format",)), ["format: Field required"]),
    "empty-curves": (_set(("curves",), []), ["curves:", "at least 1", "[]"]),
    "empty-progress": (
        _set(("curves", 1, "progress"), []),
        ["curves[1].progress:", "at least 2"],
    ),
    "non-monotone-progress": (
        _set(("curves", 0, "progress", 2), 0.2),
        ["curves[0].progress[2]:", "not strictly increasing", "0.2 after 0.25"],
    ),
    "repeated-progress": (
        _set(("curves", 1, "progress", 1), 0.0),
        ["curves[1].progress[1]:", "0.0 after 0.0"],
    ),
    "progress-above-one": (
        _set(("curves", 1, "progress", 2), 1.5),
        ["curves[1].progress[2]:", "1.5"],
    ),
    "score-length": (
        _set(("curves", 1, "score"), [0.3, 0.5]),
        ["curves[1].score:", "2 values for 3 points"],
    ),
    "proxy-length": (
        _set(("curves", 0, "proxy"), [0.0]),
        ["curves[0].proxy:", "1 values for 5 points"],
    ),
    "score-nan": (_set(("curves", 0, "score", 3), math.nan), ["curves[0].score[3]:", "nan"]),
    "kl-infinite": (_set(("curves", 0, "kl", 4), math.inf), ["curves[0].kl[4]:", "inf"]),
    "score-above-one": (_set(("curves", 0, "score", 2), 1.2), ["curves[0].score[2]:", "1.2"]),
    "score-negative": (_set(("curves", 1, "score", 0), -0.1), ["curves[1].score[0]:", "-0.1"]),
    "score-a-string": (_set(("curves", 1, "score", 0), "0.3"), ["curves[1].score[0]:", "'0.3'"]),
    "missing-score": (_delete(("curves", 1, "score")), ["curves[1].score: Field required"]),
    "seed-a-bool": (_set(("curves", 0, "seed"), True), ["curves[0].seed:", "True"]),
    "label-a-string": (_set(("curves", 0, "hacking"), "yes"), ["curves[0].hacking:", "'yes'"]),
    "misspelt-field": (_set(("curves", 1, "sccore"), [0.1]), ["curves[1].sccore:", "Extra"]),
    "duplicate-name": (
        _set(("curves", 1, "name"), "ppo/seed0"),
        ["curves[1].name:", "duplicate name 'ppo/seed0'", "curves[0]"],
    ),
    "empty-object": (lambda d: d.clear(), ["format: Field required"]),
}


def write_document(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")  # json writes NaN/Infinity literals
    return path


def read_error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        read_curves(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


def test_the_document_the_bad_ones_are_edited_from_is_good(tmp_path) -> None:
    read = read_curves(write_document(tmp_path / "curves.json", good_document()))
    assert [c.name for c in read.curves] == ["ppo/seed0", "crpg/seed0"]
    assert read.curves[0].kl == (0.0, 0.1, 0.4, 0.9, 1.6)
    assert read.curves[1].proxy is None and read.curves[1].hacking is None


@pytest.mark.parametrize("name", BAD_DOCUMENTS)
def test_each_bad_document_is_one_line_naming_file_field_and_value(tmp_path, name) -> None:
    edit, expected = BAD_DOCUMENTS[name]
    message = read_error(write_document(tmp_path / "curves.json", edited(edit)))
    for text in expected:
        assert text in message, (text, message)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"format": "rlguard-curves/1",\n "curves": [}', "invalid JSON at line 2 column"),
        (b"", "invalid JSON at line 1 column 1"),
        (b"[1, 2]", "top level: Input should be a valid dictionary"),
        (b'{"format": "rlguard-curves/1", "source": "\xff"}', "not UTF-8 text (byte 0xff)"),
    ],
)
def test_unreadable_json_is_one_line(tmp_path, raw, expected) -> None:
    path = tmp_path / "curves.json"
    path.write_bytes(raw)
    assert expected in read_error(path)


def test_a_missing_file_is_one_line(tmp_path) -> None:
    assert "cannot read curve file" in read_error(tmp_path / "absent.json")


# --- the CLI -------------------------------------------------------------------------------------

SMALL_RUN = ("--jobs", "20", "--seeds", "1", "--workers", "1", "--rules", "evalstop", "--json")


@pytest.mark.parametrize("name", ["wrong-format", "non-monotone-progress", "score-nan"])
def test_a_bad_curve_file_is_one_error_line_and_exit_2(monkeypatch, capsys, tmp_path, name):
    edit, expected = BAD_DOCUMENTS[name]
    path = write_document(tmp_path / "curves.json", edited(edit))
    code, out, err = cli(monkeypatch, capsys, "simulate", "--curves", str(path), *SMALL_RUN)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and err.startswith(f"error: {path}: ")
    for text in expected:
        assert text in err, (text, err)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("--hacking-fraction", "0.5"), "no healthy curves, but a hacking fraction of 0.5"),
        (("sweep", "hacking", "--values", "1,0.8", "--hacking-fraction", "1"), "of 0.8"),
    ],
)
def test_a_file_without_the_kinds_asked_for_is_refused(
    monkeypatch, capsys, tmp_path, argv, expected
):
    path = write_mixed(tmp_path / "ppo_only.json", n_hacking=2, n_healthy=0)
    code, out, err = cli(monkeypatch, capsys, "simulate", *argv, "--curves", str(path), *SMALL_RUN)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and expected in err, err
