"""IFEval's combination family: repeat the request first, or give two responses."""

from __future__ import annotations

import re
from typing import Any

from rlguard.judges.instructions.args import text
from rlguard.judges.instructions.text import split_on

SEPARATOR = "******"


def repeat_prompt(response: str, *, prompt_to_repeat: Any) -> str | None:
    """Starts with the request, word for word up to case and surrounding whitespace."""
    request = text(prompt_to_repeat, "prompt_to_repeat")
    if response.strip().lower().startswith(request.lower()):
        return None
    return "does not start by repeating the request word for word"


def two_responses(response: str) -> str | None:
    """Exactly two different non-empty responses separated by six asterisks."""
    parts = split_on(response, re.escape(SEPARATOR))
    if any(not p.strip() for p in parts):
        return f"an empty response between {SEPARATOR} separators"
    if len(parts) != 2:
        return f"{len(parts)} responses separated by {SEPARATOR}, needs exactly 2"
    if parts[0].strip() == parts[1].strip():
        return "the two responses are identical"
    return None
