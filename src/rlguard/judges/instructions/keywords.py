"""IFEval's keywords family: required, counted, forbidden words and letter counts.

Keywords are matched as literal text (IFEval passes them to `re` unescaped, which differs only for
keywords holding regex metacharacters, where IFEval would mis-match or crash).
"""

from __future__ import annotations

import re
from typing import Any

from rlguard.judges.instructions.args import BadKwargs, text, texts, threshold


def existence(response: str, *, keywords: Any) -> str | None:
    """Every keyword appears, case-insensitively, anywhere (inside longer words too, as IFEval)."""
    for keyword in texts(keywords, "keywords"):
        if not re.search(re.escape(keyword), response, flags=re.IGNORECASE):
            return f"missing keyword {keyword!r}"
    return None


def frequency(response: str, *, keyword: Any, frequency: Any, relation: Any) -> str | None:
    """Case-insensitive, non-overlapping occurrences of `keyword`, inside longer words too."""
    word = text(keyword, "keyword")
    need = threshold(relation, frequency, "relation", "frequency")
    found = len(re.findall(re.escape(word), response, flags=re.IGNORECASE))
    return None if need.holds(found) else f"{word!r} appears {found} times, needs {need}"


def forbidden_words(response: str, *, forbidden_words: Any) -> str | None:
    """No forbidden word as a whole word (\\b-bounded), case-insensitively."""
    for word in texts(forbidden_words, "forbidden_words"):
        if re.search(rf"\b{re.escape(word)}\b", response, flags=re.IGNORECASE):
            return f"contains forbidden word {word!r}"
    return None


def letter_frequency(
    response: str, *, letter: Any, let_frequency: Any, let_relation: Any
) -> str | None:
    """Occurrences of one letter, case-insensitively."""
    char = text(letter, "letter").lower()
    if len(char) != 1:
        raise BadKwargs(f"letter must be a single character, got {letter!r}")
    need = threshold(let_relation, let_frequency, "let_relation", "let_frequency")
    found = response.lower().count(char)
    return None if need.holds(found) else f"letter {char!r} appears {found} times, needs {need}"
