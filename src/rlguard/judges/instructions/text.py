r"""Word, sentence and paragraph counts for the checkers, as IFEval counts them.

Words are nltk's `\w+` runs, sentences nltk's Punkt sentences and all-capital words
`nltk.word_tokenize` tokens (see `tokenizers`), so "AND/OR" is one capital word and "U.S.A." one,
as in IFEval.
"""

from __future__ import annotations

import re

from rlguard.judges.instructions import tokenizers


def count_words(text: str) -> int:
    return len(tokenizers.word_runs(text))


def count_sentences(text: str) -> int:
    return len(tokenizers.sentences(text))


def capital_words(text: str) -> list[str]:
    """The nltk word tokens that are all capitals by `str.isupper`, as IFEval tests them."""
    return [word for word in tokenizers.words(text) if word.isupper()]


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
