"""change_case:*, language:response_language and punctuation:no_comma."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlguard.judges.instructions.args import BadKwargs
from rlguard.judges.instructions.registry import check_instruction

ENGLISH = "the quick brown fox jumps over the lazy dog and runs away into the forest."
GERMAN = "der schnelle braune fuchs springt über den faulen hund und läuft in den wald."


def test_english_capital_is_isupper_and_langdetects_english():
    capital = "change_case:english_capital"
    assert check_instruction(capital, ENGLISH.upper(), {}) is None
    assert check_instruction(capital, "ALL CAPs", {}) == "has lowercase letters"
    assert check_instruction(capital, "123 ...", {}) == "has no cased letters"
    assert check_instruction(capital, GERMAN.upper(), {}) == "detected language 'de', not English"
    # langdetect, as IFEval runs it, misjudges short capitalised English
    assert check_instruction(capital, "HELLO, WORLD 42!", {}) == (
        "detected language 'so', not English"
    )


def test_english_lowercase_is_islower_and_langdetects_english():
    lowercase = "change_case:english_lowercase"
    assert check_instruction(lowercase, ENGLISH, {}) is None
    assert check_instruction(lowercase, "I am", {}) == "has capital letters"
    assert check_instruction(lowercase, GERMAN, {}) == "detected language 'de', not English"


def test_response_language():
    language = "language:response_language"
    assert check_instruction(language, GERMAN, {"language": "de"}) is None
    assert check_instruction(language, ENGLISH, {"language": "de"}) == (
        "detected language 'en', needs 'de'"
    )
    assert check_instruction(language, "12345 !!!", {"language": "de"}) is None  # nothing to judge
    with pytest.raises(BadKwargs, match="language must be one of IFEval's"):
        check_instruction(language, GERMAN, {"language": "ca"})  # langdetect's, not IFEval's


def test_detection_is_deterministic():
    """A text near a language boundary, which unseeded langdetect labels differently run to run."""
    text = "ALL CAPS, 100%!"
    verdicts = {check_instruction("change_case:english_capital", text, {}) for _ in range(20)}
    assert len(verdicts) == 1


def test_a_blank_response_follows_no_instruction():
    for instruction_id in ("punctuation:no_comma", "change_case:english_lowercase"):
        assert check_instruction(instruction_id, " \n ", {}) == "empty response"


def capitals(text, relation, n):
    kwargs = {"capital_frequency": n, "capital_relation": relation}
    return check_instruction("change_case:capital_word_frequency", text, kwargs)


def test_capital_word_frequency_relation_edges():
    text = "The WELL-KNOWN NASA rule: DON'T panic."  # WELL-KNOWN, NASA, DO, N'T
    assert capitals(text, "at least", 4) is None
    assert capitals(text, "less than", 4) == "4 all-capital words, needs less than 4"
    assert capitals(text, "less than", 5) is None


@given(st.text(max_size=60).filter(str.strip))
def test_no_comma_agrees_with_membership(text):
    verdict = check_instruction("punctuation:no_comma", text, {})
    assert (verdict is None) == ("," not in text)
