r"""Word, sentence and paragraph splitting for the checkers, without nltk.

Words are `\w+` runs, exactly what IFEval's `nltk.tokenize.RegexpTokenizer(r"\w+")` yields.

Sentences: IFEval uses nltk's trained Punkt model; this is a regex stand-in. A sentence ends at a
run of `.`, `!` or `?` (plus any closing quotes or brackets) followed by whitespace or the end of
the text; a lone `.` after a title (Mr, Dr, Prof, etc, vs, Inc, ...) or after initials (`J.`,
`U.S.`, `e.g.`, `i.e.`; not the pronoun "I") does not end one. Like Punkt, a line break without
punctuation does not end a sentence. Counts may differ from Punkt on abbreviations outside that
list, on an ellipsis (always a sentence end here), on a list enumerator such as `1.` (a sentence of
its own here), and on a title or initial that really does end a sentence.

All-capital words (for change_case:capital_word_frequency): IFEval uses `nltk.word_tokenize`. Here
a word is a `\w+` run joined by hyphens, so "WELL-KNOWN" is one word as in nltk, and an apostrophe
splits ("DON'T" gives two capital words, as nltk's "DO" + "N'T" does). Counts differ from nltk on
dotted acronyms ("U.S.A." is three capital words here, one in nltk).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_HYPHENATED_WORD = re.compile(r"\w+(?:-\w+)*")
_SENTENCE_END = re.compile(
    r"(?<![^\s.!?])(?P<word>[^\s.!?]*(?:\.[^\s.!?]+)*)(?P<mark>[.!?]+)[\"'”’)\]]*(?=\s|$)"
)
_TITLES = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "inc", "ltd", "co", "cf"}
)
_INITIALS = re.compile(r"(?:[^\W\d_]\.)*[^\W\d_]")


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


def split_sentences(text: str) -> list[str]:
    """The non-empty sentences of `text` (see the module docstring for the rules)."""
    sentences, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        if end["mark"] == "." and _is_abbreviation(end["word"]):
            continue
        sentences.append(text[start : end.end()])
        start = end.end()
    sentences.append(text[start:])
    return [s.strip() for s in sentences if s.strip()]


def _is_abbreviation(word: str) -> bool:
    word = word.lstrip("\"'“‘([")
    initials = _INITIALS.fullmatch(word) is not None and word != "I"
    return word.lower() in _TITLES or initials


def count_sentences(text: str) -> int:
    return len(split_sentences(text))


def capital_words(text: str) -> list[str]:
    """Words in all capitals by `str.isupper`, as IFEval tests each token."""
    return [w for w in _HYPHENATED_WORD.findall(text) if w.isupper()]


def split_on(text: str, divider: str) -> list[str]:
    """Pieces between `divider` (a regex) matches, as IFEval splits.

    An empty first or last piece (a leading or trailing divider) is dropped; an empty piece in the
    middle (two dividers in a row) is kept so that checkers can reject it as IFEval does.
    """
    pieces = re.split(divider, text)
    if pieces and not pieces[0].strip():
        pieces = pieces[1:]
    if pieces and not pieces[-1].strip():
        pieces = pieces[:-1]
    return pieces


def blank_line_paragraphs(text: str) -> list[str]:
    r"""The non-empty paragraphs between "\n\n" separators, as IFEval splits them."""
    return [p for p in text.split("\n\n") if p.strip()]
