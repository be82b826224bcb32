"""Errors a user can fix: the CLI prints them as one line and exits with code 2."""

from __future__ import annotations

import json
from typing import Any


class InputError(ValueError):
    """Bad input (a file, a field, an option). The message names where and what."""


def shown(value: Any) -> str:
    """A value as an error message quotes it: JSON, cut to 80 characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
