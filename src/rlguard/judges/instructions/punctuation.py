"""IFEval's punctuation family."""

from __future__ import annotations


def no_comma(response: str) -> str | None:
    commas = response.count(",")
    return f"contains {commas} comma(s)" if commas else None
