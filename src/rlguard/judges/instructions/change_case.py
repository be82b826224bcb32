"""IFEval's change_case family.

IFEval's english_capital and english_lowercase also ask langdetect whether the response is English;
langdetect is not available offline, so only the case half is checked (`str.isupper` /
`str.islower` on the whole response, as IFEval does).
"""

from __future__ import annotations

from typing import Any

from rlguard.judges.instructions.args import threshold
from rlguard.judges.instructions.text import capital_words


def english_capital(response: str) -> str | None:
    if response.isupper():
        return None
    return "has lowercase letters" if response.upper() != response else "has no cased letters"


def english_lowercase(response: str) -> str | None:
    if response.islower():
        return None
    return "has capital letters" if response.lower() != response else "has no cased letters"


def capital_word_frequency(
    response: str, *, capital_frequency: Any, capital_relation: Any
) -> str | None:
    need = threshold(capital_relation, capital_frequency, "capital_relation", "capital_frequency")
    found = len(capital_words(response))
    return None if need.holds(found) else f"{found} all-capital words, needs {need}"
