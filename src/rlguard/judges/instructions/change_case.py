"""IFEval's change_case family: the whole response in English capitals or lowercase, or a number
of all-capital words.

Case is `str.isupper` / `str.islower` on the whole response, English is langdetect's (see
`language`), both as IFEval checks them.
"""

from __future__ import annotations

from typing import Any

from rlguard.judges.instructions.args import threshold
from rlguard.judges.instructions.language import not_english
from rlguard.judges.instructions.text import capital_words


def english_capital(response: str) -> str | None:
    if not response.isupper():
        return "has lowercase letters" if response.upper() != response else "has no cased letters"
    return not_english(response)


def english_lowercase(response: str) -> str | None:
    if not response.islower():
        return "has capital letters" if response.lower() != response else "has no cased letters"
    return not_english(response)


def capital_word_frequency(
    response: str, *, capital_frequency: Any, capital_relation: Any
) -> str | None:
    need = threshold(capital_relation, capital_frequency, "capital_relation", "capital_frequency")
    found = len(capital_words(response))
    return None if need.holds(found) else f"{found} all-capital words, needs {need}"
