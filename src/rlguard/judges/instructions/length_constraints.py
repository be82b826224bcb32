"""IFEval's length_constraints family: words, sentences and paragraphs."""

from __future__ import annotations

from typing import Any

from rlguard.judges.instructions.args import BadKwargs, count, text, threshold
from rlguard.judges.instructions.text import count_sentences, count_words, split_on

_FIRST_WORD_STOPS = ".,?!'\""


def number_words(response: str, *, num_words: Any, relation: Any) -> str | None:
    need = threshold(relation, num_words, "relation", "num_words")
    words = count_words(response)
    return None if need.holds(words) else f"{words} words, needs {need}"


def number_sentences(response: str, *, num_sentences: Any, relation: Any) -> str | None:
    need = threshold(relation, num_sentences, "relation", "num_sentences")
    sentences = count_sentences(response)
    return None if need.holds(sentences) else f"{sentences} sentences, needs {need}"


def number_paragraphs(response: str, *, num_paragraphs: Any) -> str | None:
    """Exactly `num_paragraphs` paragraphs separated by the markdown divider ***."""
    wanted = count(num_paragraphs, "num_paragraphs")
    paragraphs = split_on(response, r"\s?\*\*\*\s?")
    if any(not p.strip() for p in paragraphs):
        return "an empty paragraph between *** dividers"
    if len(paragraphs) != wanted:
        return f"{len(paragraphs)} paragraphs separated by ***, needs exactly {wanted}"
    return None


def nth_paragraph_first_word(
    response: str, *, num_paragraphs: Any, nth_paragraph: Any, first_word: Any
) -> str | None:
    r"""Exactly `num_paragraphs` non-empty paragraphs split by "\n\n", the nth starting with
    `first_word`.

    As in IFEval, the count skips empty pieces but the nth paragraph is the nth piece of the raw
    split, so a run of four newlines before it makes it empty. The first word is the paragraph's
    first whitespace token, leading quotes dropped, cut at the first punctuation mark and lowercased
    letter by letter (so "**Summary**" is not "summary").
    """
    wanted = count(num_paragraphs, "num_paragraphs")
    nth = count(nth_paragraph, "nth_paragraph")
    word = text(first_word, "first_word", strip=False).lower()
    if nth > wanted:
        raise BadKwargs(f"nth_paragraph {nth} exceeds num_paragraphs {wanted}")
    pieces = response.split("\n\n")
    found = sum(1 for piece in pieces if piece.strip())
    if found != wanted:
        return f"{found} paragraphs separated by blank lines, needs exactly {wanted}"
    paragraph = pieces[nth - 1].strip()
    if not paragraph:
        return f"paragraph {nth} is empty (an extra blank line before it)"
    actual = _first_word(paragraph)
    return None if actual == word else f"paragraph {nth} starts with {actual!r}, needs {word!r}"


def _first_word(paragraph: str) -> str:
    token = paragraph.split()[0].lstrip("'").lstrip('"')
    letters = []
    for char in token:
        if char in _FIRST_WORD_STOPS:
            break
        letters.append(char.lower())
    return "".join(letters)
