"""IFEval's detectable_format family: JSON, titles, sections, highlights, bullets, fixed answers."""

from __future__ import annotations

import json
import re
from typing import Any

from rlguard.judges.instructions.args import count, pattern, text

CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
# IFEval removes each of these prefixes in turn, so "```json```" loses both fences.
_FENCE_OPENINGS = ("```json", "```Json", "```JSON", "```")
_TITLE = re.compile(r"<<[^\n]+>>")
_HIGHLIGHT = re.compile(r"\*[^\n*]*\*")
_BOLD = re.compile(r"\*\*[^\n*]*\*\*")
_STAR_BULLET = re.compile(r"^\s*\*[^*].*$", flags=re.MULTILINE)
_DASH_BULLET = re.compile(r"^\s*-.*$", flags=re.MULTILINE)


def json_format(response: str) -> str | None:
    """The whole response parses as JSON, optionally inside one markdown code fence."""
    body = response.strip()
    for opening in _FENCE_OPENINGS:
        body = body.removeprefix(opening)
    body = body.removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError as exc:
        return f"not valid JSON ({exc})"
    return None


def title(response: str) -> str | None:
    """A non-blank title on one line in double angular brackets, such as <<poem of joy>>."""
    for found in _TITLE.findall(response):
        if found.lstrip("<").rstrip(">").strip():
            return None
    return "no title in <<double angular brackets>>"


def multiple_sections(response: str, *, section_spliter: Any, num_sections: Any) -> str | None:
    """At least `num_sections` section headers "<spliter> <number>" (case-sensitive; the spliter
    is a regular expression, as IFEval pastes it into its pattern unescaped)."""
    spliter = text(section_spliter, "section_spliter")
    wanted = count(num_sections, "num_sections")
    found = len(pattern(rf"\s?{spliter}\s?\d+\s?", "section_spliter").split(response)) - 1
    if found >= wanted:
        return None
    return f"{found} sections marked '{spliter} N', needs at least {wanted}"


def number_highlighted_sections(response: str, *, num_highlights: Any) -> str | None:
    """At least `num_highlights` non-blank *highlighted* or **bold** spans within one line."""
    wanted = count(num_highlights, "num_highlights")
    single = sum(1 for h in _HIGHLIGHT.findall(response) if h.strip("*").strip())
    double = sum(1 for h in _BOLD.findall(response) if h[2:-2].strip())
    found = single + double
    if found >= wanted:
        return None
    return f"{found} highlighted sections, needs at least {wanted}"


def number_bullet_lists(response: str, *, num_bullets: Any) -> str | None:
    """Exactly `num_bullets` lines starting with "*" (not "**") or "-", as IFEval counts them."""
    wanted = count(num_bullets, "num_bullets")
    found = len(_STAR_BULLET.findall(response)) + len(_DASH_BULLET.findall(response))
    return None if found == wanted else f"{found} bullet points, needs exactly {wanted}"


def constrained_response(response: str) -> str | None:
    """One of IFEval's fixed answers appears anywhere in the response."""
    if any(option in response for option in CONSTRAINED_RESPONSES):
        return None
    return f"contains none of {', '.join(map(repr, CONSTRAINED_RESPONSES))}"
