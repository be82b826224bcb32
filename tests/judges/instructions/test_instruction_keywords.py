"""keywords:*: IFEval's regex substring vs whole-word matching, case-insensitivity, relations."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.judges.instructions.args import BadKwargs
from rlguard.judges.instructions.registry import check_instruction


def test_existence_matches_inside_words_as_a_regex():
    assert check_instruction("keywords:existence", "A catalog.", {"keywords": ["cat"]}) is None
    assert check_instruction("keywords:existence", "Eggs, eXgX", {"keywords": ["e.g."]}) is None
    assert check_instruction("keywords:existence", "I like f.", {"keywords": ["f(x)"]}) == (
        "missing keyword 'f(x)'"  # the pattern f(x) needs "fx"
    )
    with pytest.raises(BadKwargs, match="keywords is not a valid regular expression"):
        check_instruction("keywords:existence", "f(x", {"keywords": ["f(x"]})


@settings(max_examples=50)
@given(st.text(max_size=40), st.text(alphabet="abcdefgh", min_size=1, max_size=5))
def test_existence_holds_once_the_keyword_is_inserted(text, keyword):
    """(for a keyword without metacharacters)"""
    assert (
        check_instruction("keywords:existence", text + keyword.upper(), {"keywords": [keyword]})
        is None
    )


def frequency(text, relation, n, keyword="the"):
    return check_instruction(
        "keywords:frequency", text, {"keyword": keyword, "frequency": n, "relation": relation}
    )


def test_frequency_counts_substrings_case_insensitively():
    text = "The theory."  # "The" and "theory" both contain "the"
    assert frequency(text, "at least", 2) is None
    assert frequency(text, "at least", 3) == "'the' appears 2 times, needs at least 3"
    assert frequency(text, "less than", 3) is None
    assert frequency(text, "less than", 2) == "'the' appears 2 times, needs less than 2"


def test_forbidden_words_are_whole_words_only():
    kwargs = {"forbidden_words": ["red", "blue"]}
    assert check_instruction("keywords:forbidden_words", "Bluebird, reddish.", kwargs) is None
    assert check_instruction("keywords:forbidden_words", "It is BLUE.", kwargs) == (
        "contains forbidden word 'blue'"
    )


def letters(text, relation, n, letter="a"):
    return check_instruction(
        "keywords:letter_frequency",
        text,
        {"letter": letter, "let_frequency": n, "let_relation": relation},
    )


def test_letter_frequency_is_case_insensitive():
    assert letters("Banana", "at least", 3) is None
    assert letters("Banana", "at least", 4) == "letter 'a' appears 3 times, needs at least 4"
    assert letters("bAnAnA", "less than", 4, letter="A") is None


def test_letter_must_be_one_letter_a_to_z():
    for bad in ("an", "é", "1", " a"):  # IFEval would draw a random letter instead
        with pytest.raises(BadKwargs, match="letter must be one letter a-z"):
            letters("Banana", "at least", 1, letter=bad)
