"""IFEval's startend family: a fixed closing phrase, a quoted response."""

from __future__ import annotations

from typing import Any

from rlguard.judges.instructions.args import text


def end_checker(response: str, *, end_phrase: Any) -> str | None:
    """Ends with the phrase, case-insensitively, ignoring outer whitespace and double quotes."""
    phrase = text(end_phrase, "end_phrase")
    if response.strip().strip('"').lower().endswith(phrase.lower()):
        return None
    return f"does not end with {phrase!r}"


def quotation(response: str) -> str | None:
    """The whole (stripped) response is wrapped in double quotation marks."""
    body = response.strip()
    if len(body) > 1 and body[0] == body[-1] == '"':
        return None
    return "not wrapped in double quotation marks"
