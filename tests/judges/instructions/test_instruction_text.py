"""The nltk-free tokenizers: IFEval's \\w+ word count and the regex sentence splitter."""

from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.judges.instructions.text import (
    blank_line_paragraphs,
    capital_words,
    count_sentences,
    count_words,
    split_on,
    split_sentences,
)


def test_words_are_word_character_runs():
    assert count_words("") == 0
    assert count_words("Hello, world!") == 2
    assert count_words("well-known e-mail") == 4  # hyphens split, as RegexpTokenizer(r"\w+")
    assert count_words("don't stop_now 3.14") == 5  # don, t, stop_now, 3, 14
    assert count_words("naïve café") == 2


@settings(max_examples=50)
@given(st.lists(st.text(alphabet="abcXYZ019_", min_size=1), max_size=20))
def test_word_count_of_space_joined_words(words):
    assert count_words(" ".join(words)) == len(words)


def test_sentences_end_at_terminators_before_whitespace():
    assert split_sentences("Hello world. How are you? Fine!") == [
        "Hello world.",
        "How are you?",
        "Fine!",
    ]
    assert count_sentences("Pi is 3.14 here. Visit example.com today.") == 2
    assert count_sentences("Wait?! Really.") == 2
    assert count_sentences('He said "Stop." Then he left.') == 2
    assert count_sentences("") == 0
    assert count_sentences("  \n ") == 0


def test_line_breaks_alone_do_not_end_sentences():
    assert count_sentences("A heading\nand a line without a stop") == 1
    assert count_sentences("Line one.\nLine two.") == 2


def test_titles_and_initials_do_not_end_sentences():
    assert count_sentences("Mr. Smith met Dr. Jones. They talked.") == 2
    assert count_sentences("Fruit, e.g. apples, i.e. food. Yes.") == 2
    assert count_sentences("The U.S. Army and J. R. Tolkien agree.") == 1
    assert count_sentences("Neither did I. We left.") == 2


@settings(max_examples=50)
@given(st.integers(min_value=0, max_value=30))
def test_sentence_count_of_repeated_sentences(n):
    assert count_sentences(" ".join(["This is fine."] * n)) == n


def test_capital_words_keep_hyphens_and_split_apostrophes():
    assert capital_words("WELL-KNOWN facts") == ["WELL-KNOWN"]
    assert capital_words("DON'T I'm") == ["DON", "T", "I"]
    assert capital_words("abc 123 Abc") == []


def test_split_on_drops_only_outer_empty_pieces():
    divider = r"\s?\*\*\*\s?"
    assert split_on("a *** b *** c", divider) == ["a", "b", "c"]
    assert split_on("*** a ***", divider) == ["a"]
    assert split_on("a ****** b", divider) == ["a", "", "b"]
    assert split_on("", divider) == []


def test_blank_line_paragraphs():
    assert blank_line_paragraphs("a\nb\n\nc\n\n\n\nd\n\n") == ["a\nb", "c", "d"]
    assert blank_line_paragraphs("  ") == []
