"""What every task of the lab's world provides: prompts, responses of a chosen quality and length,
and the gold score (the world feedback) of any response."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Protocol

from rlguard.judges.base import Judge
from rlguard.judges.registry import JudgeSpec, build_judge


@dataclass(frozen=True)
class Row:
    """One prompt of a task with what its judges and gold scorer need to know about it."""

    task: str
    prompt: str
    metadata: dict[str, Any]


class WorldTask(Protocol):
    name: ClassVar[str]
    judges: ClassVar[tuple[str, ...]]
    """CGPO's constraints for the task (judge registry names); empty for open chat."""

    def prompt(self, rng: random.Random) -> Row: ...

    def respond(self, row: Row, rng: random.Random, correct: bool, elaboration: int) -> str:
        """A response that is right or flawed, with `elaboration` extra sentences: the cheap
        feature (length) the proxy reward model can learn in place of quality."""
        ...

    def gold(self, rows: Sequence[Row], completions: Sequence[str]) -> list[float]:
        """The world's verdict in [0, 1] on each response."""
        ...


def judged(name: str, rows: Sequence[Row], completions: Sequence[str]) -> list[float]:
    """1.0 where the judge `name` is satisfied; violations and judge failures score 0.

    Verdicts are memoised per (judge, prompt, completion): in this world a prompt fixes its
    metadata, and policies repeat themselves, so most code never needs a second sandbox run."""
    keys = [(name, r.prompt, c) for r, c in zip(rows, completions, strict=True)]
    todo = {k: r for k, r in zip(keys, rows, strict=True) if k not in _VERDICTS}
    if todo:
        verdicts = _judge(name).judge(
            [k[1] for k in todo], [k[2] for k in todo], [r.metadata for r in todo.values()]
        )
        _VERDICTS.update({k: float(v == 1) for k, v in zip(todo, verdicts, strict=True)})
    return [_VERDICTS[k] for k in keys]


_VERDICTS: dict[tuple[str, str, str], float] = {}


@cache
def _judge(name: str) -> Judge:
    return build_judge(JudgeSpec(name=name))
