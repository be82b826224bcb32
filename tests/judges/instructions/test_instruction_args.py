"""IFEval kwargs validation: None-valued keys dropped, malformed values rejected."""

import math

import numpy as np
import pytest

from rlguard.judges.instructions.args import (
    BadKwargs,
    Threshold,
    clean,
    count,
    pattern,
    text,
    texts,
    threshold,
)


def test_clean_drops_none_and_nan():
    assert clean({"num_words": 100, "relation": "less than", "keyword": None, "x": math.nan}) == {
        "num_words": 100,
        "relation": "less than",
    }
    assert clean(None) == {}
    with pytest.raises(BadKwargs):
        clean(["num_words", 3])


def test_count_accepts_integers_and_integral_floats():
    assert count(3, "n") == 3
    assert count(3.0, "n") == 3
    assert count(np.int64(4), "n") == 4
    for bad in ("3", 2.5, True, None, [1]):
        with pytest.raises(BadKwargs, match="n must be an integer"):
            count(bad, "n")
    for below_one in (0, -2):  # IFEval would draw a random count instead
        with pytest.raises(BadKwargs, match="n must be at least 1"):
            count(below_one, "n")


def test_text_and_texts():
    assert text("  P.S. ", "m") == "P.S."
    assert text("  P.S. ", "m", strip=False) == "  P.S. "
    assert texts(("a", " b"), "k") == ["a", " b"]  # IFEval does not strip keyword lists
    for bad in ("", "  ", 3):
        with pytest.raises(BadKwargs):
            text(bad, "m")
    for bad in ("word", [], ["ok", ""], None):
        with pytest.raises(BadKwargs):
            texts(bad, "k")


def test_less_than_is_strict_and_at_least_inclusive():
    assert Threshold("less than", 5).holds(4)
    assert not Threshold("less than", 5).holds(5)
    assert Threshold("at least", 5).holds(5)
    assert not Threshold("at least", 5).holds(4)
    assert str(threshold("at least", 5, "relation", "n")) == "at least 5"


def test_patterns_are_kwargs_as_regexes():
    assert pattern("e.g", "k").search("eXg")
    with pytest.raises(BadKwargs, match=r"k is not a valid regular expression .*'\(a'"):
        pattern("(a", "k")


def test_other_relations_are_rejected():
    with pytest.raises(BadKwargs, match="relation must be"):
        threshold("at most", 5, "relation", "n")
