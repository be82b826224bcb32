"""length_constraints:*: relation edges and IFEval's paragraph rules."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.judges.instructions.args import BadKwargs
from rlguard.judges.instructions.registry import check_instruction

WORDS = "length_constraints:number_words"
SENTENCES = "length_constraints:number_sentences"
PARAGRAPHS = "length_constraints:number_paragraphs"
NTH = "length_constraints:nth_paragraph_first_word"


def test_number_words_relation_edges():
    text = "one two three"
    assert check_instruction(WORDS, text, {"relation": "less than", "num_words": 4}) is None
    assert check_instruction(WORDS, text, {"relation": "less than", "num_words": 3}) == (
        "3 words, needs less than 3"
    )
    assert check_instruction(WORDS, text, {"relation": "at least", "num_words": 3}) is None


@settings(max_examples=50)
@given(st.text(max_size=80).filter(str.strip), st.integers(min_value=1, max_value=20))
def test_less_than_and_at_least_are_complements(text, bound):
    less = check_instruction(WORDS, text, {"relation": "less than", "num_words": bound})
    at_least = check_instruction(WORDS, text, {"relation": "at least", "num_words": bound})
    assert (less is None) != (at_least is None)


def test_number_sentences_relation_edges():
    text = "Hi there. How are you? Great!"
    assert check_instruction(SENTENCES, text, {"relation": "at least", "num_sentences": 3}) is None
    assert check_instruction(SENTENCES, text, {"relation": "at least", "num_sentences": 4}) == (
        "3 sentences, needs at least 4"
    )
    assert check_instruction(SENTENCES, text, {"relation": "less than", "num_sentences": 3}) == (
        "3 sentences, needs less than 3"
    )


def test_number_paragraphs_ignores_outer_dividers():
    assert check_instruction(PARAGRAPHS, "***\nOne.\n***\nTwo.\n***", {"num_paragraphs": 2}) is None
    assert check_instruction(PARAGRAPHS, "One.***Two.", {"num_paragraphs": 2}) is None
    assert check_instruction(PARAGRAPHS, "Just one.", {"num_paragraphs": 2}) == (
        "1 paragraphs separated by ***, needs exactly 2"
    )


def test_number_paragraphs_rejects_an_empty_middle_paragraph():
    assert check_instruction(PARAGRAPHS, "One.\n***\n***\nTwo.", {"num_paragraphs": 2}) == (
        "an empty paragraph between *** dividers"
    )


def nth(text, num=3, n=2, word="then"):
    return check_instruction(
        NTH, text, {"num_paragraphs": num, "nth_paragraph": n, "first_word": word}
    )


def test_nth_paragraph_first_word_strips_quotes_and_punctuation():
    assert nth('First.\n\n"Then," she said.\n\nLast.') is None
    assert nth("First.\n\nTHEN! we go.\n\nLast.") is None
    assert nth("First.\n\nThen\n\n\n\nLast.") is None  # four newlines: still three paragraphs


def test_nth_paragraph_is_the_nth_piece_of_ifevals_raw_split():
    assert nth("First.\n\n\n\nThen go.\n\nLast.") == (
        "paragraph 2 is empty (an extra blank line before it)"
    )
    assert nth("\n\nThen go.\n\nB.\n\nC.", n=1) == (
        "paragraph 1 is empty (an extra blank line before it)"
    )


def test_nth_paragraph_first_word_takes_punctuation_outside_ifevals_set_literally():
    assert nth("First.\n\nThen: go.\n\nLast.") == "paragraph 2 starts with 'then:', needs 'then'"
    assert nth("First.\n\n**Then** go.\n\nLast.") == (
        "paragraph 2 starts with '**then**', needs 'then'"
    )


def test_nth_paragraph_first_word_needs_the_exact_paragraph_count():
    assert nth("First.\n\nThen go.") == "2 paragraphs separated by blank lines, needs exactly 3"
    assert (
        nth("First.\nThen go.\nLast.") == "1 paragraphs separated by blank lines, needs exactly 3"
    )


def test_nth_paragraph_beyond_num_paragraphs_is_bad_kwargs():
    with pytest.raises(BadKwargs, match="nth_paragraph 4 exceeds num_paragraphs 3"):
        nth("a\n\nb\n\nc", n=4)
