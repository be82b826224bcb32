"""The judge protocol: one verdict per (prompt, completion, metadata), with a reason to audit it.

A verdict is 1 (constraint satisfied), 0 (violated) or -1 (the judge itself failed: missing
metadata, a crashed checker, an unreachable endpoint). Failures are kept apart from violations so
a broken judge is visible in the pass rates instead of silently punishing the policy.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

SATISFIED = 1
VIOLATED = 0
FAILED = -1

Metadata = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Verdict:
    value: int
    reason: str = ""


def satisfied(reason: str = "") -> Verdict:
    return Verdict(SATISFIED, reason)


def violated(reason: str) -> Verdict:
    return Verdict(VIOLATED, reason)


def failed(reason: str) -> Verdict:
    return Verdict(FAILED, reason)


class Judge(ABC):
    """A constraint on responses. Subclasses implement `evaluate` (or `check` for one sample)."""

    name: ClassVar[str]

    def judge(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[int]:
        return [v.value for v in self.evaluate(prompts, completions, metadata)]

    def evaluate(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[Verdict]:
        """Verdicts with reasons, in input order. The default checks samples one at a time."""
        _check_lengths(prompts, completions, metadata)
        return [
            self._safe_check(p, c, m)
            for p, c, m in zip(prompts, completions, metadata, strict=True)
        ]

    def check(self, prompt: str, completion: str, metadata: Metadata) -> Verdict:
        raise NotImplementedError(f"{type(self).__name__} implements neither check nor evaluate")

    def _safe_check(self, prompt: str, completion: str, metadata: Metadata) -> Verdict:
        try:
            return self.check(prompt, completion, metadata)
        except Exception as exc:  # a checker bug is a judge failure, never a crash of training
            return failed(f"{type(exc).__name__}: {exc}")


class MissingMetadata(LookupError):
    """A sample lacks the metadata field its judge needs (a -1 verdict, not a violation)."""


def require(metadata: Metadata, key: str) -> Any:
    """The metadata field a judge needs; raises MissingMetadata (-> a -1 verdict) naming the key."""
    if key not in metadata or metadata[key] is None:
        raise MissingMetadata(f"metadata has no {key!r}")
    return metadata[key]


def _check_lengths(*columns: Sequence[Any]) -> None:
    if len({len(c) for c in columns}) > 1:
        lengths = [len(c) for c in columns]
        raise ValueError(f"prompts, completions, metadata differ in length: {lengths}")
