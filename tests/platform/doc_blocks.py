"""The fenced blocks of a doc page, for the tests that run them as written. A block a test
cannot run in the suite is preceded by `<!-- by hand: WHY -->`, which the page keeps visible to
its maintainers and the tests check is there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
BY_HAND = re.compile(r"<!-- by hand: (.+?) -->\s*\Z", re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    by_hand: str | None  # why the suite does not run it


def blocks(page: str) -> list[Block]:
    text = (DOCS / page).read_text()
    found = []
    for match in FENCE.finditer(text):
        before = BY_HAND.search(text[: match.start()])
        found.append(Block(match[1], match[2], before[1] if before else None))
    return found
