"""change_case:* and punctuation:no_comma."""

from hypothesis import given
from hypothesis import strategies as st

from rlguard.judges.instructions.registry import check_instruction


def test_english_capital_uses_isupper():
    assert check_instruction("change_case:english_capital", "ALL CAPS, 100%!", {}) is None
    assert (
        check_instruction("change_case:english_capital", "ALL CAPs", {}) == "has lowercase letters"
    )
    assert check_instruction("change_case:english_capital", "123 ...", {}) == "has no cased letters"


def test_english_lowercase_uses_islower():
    assert check_instruction("change_case:english_lowercase", "all lower, 100%!", {}) is None
    assert check_instruction("change_case:english_lowercase", "I am", {}) == "has capital letters"
    assert check_instruction("change_case:english_lowercase", "", {}) == "has no cased letters"


def capitals(text, relation, n):
    kwargs = {"capital_frequency": n, "capital_relation": relation}
    return check_instruction("change_case:capital_word_frequency", text, kwargs)


def test_capital_word_frequency_relation_edges():
    text = "The WELL-KNOWN NASA rule: DON'T panic."  # WELL-KNOWN, NASA, DON, T
    assert capitals(text, "at least", 4) is None
    assert capitals(text, "less than", 4) == "4 all-capital words, needs less than 4"
    assert capitals(text, "less than", 5) is None


@given(st.text(max_size=60))
def test_no_comma_agrees_with_membership(text):
    verdict = check_instruction("punctuation:no_comma", text, {})
    assert (verdict is None) == ("," not in text)
