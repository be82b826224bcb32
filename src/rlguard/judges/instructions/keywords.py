"""IFEval's keywords family: required, counted, forbidden words and letter counts.

Keywords are regular expressions, as IFEval passes them to `re` unescaped: a keyword holding
metacharacters ("e.g.") matches as a pattern, and one that is not a valid pattern ("f(x") is a
judge failure where IFEval would crash.
"""

from __future__ import annotations

import re
import string
from typing import Any

from rlguard.judges.instructions.args import BadKwargs, pattern, text, texts, threshold


def existence(response: str, *, keywords: Any) -> str | None:
    """Every keyword appears, case-insensitively, anywhere (inside longer words too, as IFEval)."""
    for keyword in texts(keywords, "keywords"):
        if not pattern(keyword, "keywords", re.IGNORECASE).search(response):
            return f"missing keyword {keyword!r}"
    return None


def frequency(response: str, *, keyword: Any, frequency: Any, relation: Any) -> str | None:
    """Case-insensitive, non-overlapping matches of `keyword`, inside longer words too."""
    word = text(keyword, "keyword")
    need = threshold(relation, frequency, "relation", "frequency")
    found = len(pattern(word, "keyword", re.IGNORECASE).findall(response))
    return None if need.holds(found) else f"{word!r} appears {found} times, needs {need}"


def forbidden_words(response: str, *, forbidden_words: Any) -> str | None:
    """No forbidden word as a whole word (\\b-bounded), case-insensitively."""
    for word in texts(forbidden_words, "forbidden_words"):
        if pattern(rf"\b{word}\b", "forbidden_words", re.IGNORECASE).search(response):
            return f"contains forbidden word {word!r}"
    return None


def letter_frequency(
    response: str, *, letter: Any, let_frequency: Any, let_relation: Any
) -> str | None:
    """Occurrences of one letter a-z, case-insensitively."""
    char = text(letter, "letter", strip=False).lower()
    if len(char) != 1 or char not in string.ascii_lowercase:
        raise BadKwargs(f"letter must be one letter a-z, got {letter!r}")
    need = threshold(let_relation, let_frequency, "let_relation", "let_frequency")
    found = response.lower().count(char)
    return None if need.holds(found) else f"letter {char!r} appears {found} times, needs {need}"
