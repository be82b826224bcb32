"""IFEval's detectable_content family: [placeholders] and postscripts."""

from __future__ import annotations

import re
from typing import Any

from rlguard.judges.instructions.args import count, pattern, text

_PLACEHOLDER = re.compile(r"\[.*?\]")


def number_placeholders(response: str, *, num_placeholders: Any) -> str | None:
    """At least `num_placeholders` spans in square brackets, such as [address], within one line."""
    wanted = count(num_placeholders, "num_placeholders")
    found = len(_PLACEHOLDER.findall(response))
    return None if found >= wanted else f"{found} [placeholders], needs at least {wanted}"


def postscript(response: str, *, postscript_marker: Any) -> str | None:
    """A line containing the marker, case-insensitively; P.S. and P.P.S allow spaces after dots.

    Other markers are regular expressions, as IFEval pastes them into its pattern unescaped.
    """
    marker = text(postscript_marker, "postscript_marker")
    if marker == "P.P.S":
        source = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        source = r"\s*p\.\s?s\..*$"
    else:
        source = rf"\s*{marker.lower()}.*$"
    if pattern(source, "postscript_marker", re.MULTILINE).search(response.lower()):
        return None
    return f"no postscript starting with {marker!r}"
