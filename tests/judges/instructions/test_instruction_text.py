"""IFEval's splitting: \\w+ word counts, nltk's Punkt sentences, nltk word tokens for capitals."""

from hypothesis import given, settings
from hypothesis import strategies as st

from rlguard.judges.instructions.text import capital_words, count_sentences, count_words, split_on


def test_words_are_word_character_runs():
    assert count_words("") == 0
    assert count_words("Hello, world!") == 2
    assert count_words("well-known e-mail") == 4  # hyphens split, as RegexpTokenizer(r"\w+")
    assert count_words("don't stop_now 3.14") == 5  # don, t, stop_now, 3, 14
    assert count_words("naïve café") == 2
    assert count_words("तेज़ भूरी लोमड़ी") == 3  # nltk's \w keeps vowel signs inside words


@settings(max_examples=50)
@given(st.lists(st.text(alphabet="abcXYZ019_", min_size=1), max_size=20))
def test_word_count_of_space_joined_words(words):
    assert count_words(" ".join(words)) == len(words)


def test_sentences_are_punkts():
    assert count_sentences("Hello world. How are you? Fine!") == 3
    assert count_sentences("Pi is 3.14 here. Visit example.com today.") == 2
    assert count_sentences("Mr. Smith met Dr. Jones. They talked.") == 2  # known abbreviations
    assert count_sentences("The U.S. Army and J. R. Tolkien agree.") == 1
    assert count_sentences("Fruit, e.g. apples, i.e. food. Yes.") == 4  # Punkt's model splits here
    assert count_sentences("1. First. 2. Second.") == 4
    assert count_sentences("A heading\nand a line without a stop") == 1
    assert count_sentences("") == count_sentences("  \n ") == 0


@settings(max_examples=30)
@given(st.integers(min_value=0, max_value=30))
def test_sentence_count_of_repeated_sentences(n):
    assert count_sentences(" ".join(["This is fine."] * n)) == n


def test_capital_words_are_nltk_tokens():
    text = "Use AND/OR, not U.S.A. or WELL-KNOWN."
    assert capital_words(text) == ["AND/OR", "U.S.A.", "WELL-KNOWN"]
    assert capital_words("DON'T I'm") == ["DO", "N'T", "I"]  # nltk splits contractions
    assert capital_words("abc 123 Abc ... ,") == []


def test_split_on_drops_only_outer_empty_pieces():
    divider = r"\s?\*\*\*\s?"
    assert split_on("a *** b *** c", divider) == ["a", "b", "c"]
    assert split_on("*** a ***", divider) == ["a"]
    assert split_on("a ****** b", divider) == ["a", "", "b"]
    assert split_on("", divider) == []
