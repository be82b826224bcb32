"""Regular expressions from a job's `watch` spec, compiled with RE2.

The watcher matches a tenant's pattern against lines the tenant's job writes: both hostile. A
backtracking engine (Python's `re`) takes exponential time on patterns such as `(a+)+$` against
a line of `a`s, so one spec could spin a core of the platform for as long as it likes. RE2
matches in time linear in the line, with memory bounded per pattern (`MAX_MEM`); it refuses the
few features that need backtracking (backreferences, lookaround), which a spec is refused for
at submission with RE2's reason.
"""

from __future__ import annotations

from typing import Any

import re2

MAX_MEM = 8 << 20
"""Bytes RE2 may use for one compiled pattern: a pattern that needs more is refused."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the caller's error, not a log line
    options.max_mem = MAX_MEM
    return options


def compile_regex(pattern: str, field: str) -> Any:
    """`pattern` compiled by RE2; a ValueError naming `field` and the value when RE2 refuses it."""
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode(errors="replace")
        message = f"{field} {pattern!r} is not a regular expression RE2 takes: {reason}"
        raise ValueError(message) from None
