"""CGPO's mixture of judges: a response is positive only if every judge of its task passes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rlguard.judges.base import FAILED, SATISFIED, VIOLATED, Judge, Metadata, Verdict


@dataclass(frozen=True, slots=True)
class MixtureVerdicts:
    """The AND of all judges per sample, and every judge's own verdict for auditing."""

    combined: list[int]
    per_judge: dict[str, list[Verdict]]


def combine(values: Sequence[int]) -> int:
    """AND over one sample's verdicts: -1 if any judge failed, else 1 only if all passed."""
    if FAILED in values:
        return FAILED
    return SATISFIED if all(v == SATISFIED for v in values) else VIOLATED


@dataclass
class MixtureOfJudges:
    """Runs each judge over the batch and ANDs them; keeps running per-judge pass counts.

    With no judges every response passes (an unconstrained task).
    """

    judges: Sequence[Judge]
    _counts: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judge names repeat: {names}")

    @property
    def names(self) -> list[str]:
        return [j.name for j in self.judges]

    def judge(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[int]:
        return self.evaluate(prompts, completions, metadata).combined

    def evaluate(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> MixtureVerdicts:
        per_judge = {j.name: j.evaluate(prompts, completions, metadata) for j in self.judges}
        for name, verdicts in per_judge.items():
            counts = self._counts.setdefault(name, [0, 0, 0])  # satisfied, violated, failed
            for v in verdicts:
                counts[(SATISFIED, VIOLATED, FAILED).index(v.value)] += 1
        combined = [
            combine([per_judge[name][i].value for name in per_judge]) for i in range(len(prompts))
        ]
        return MixtureVerdicts(combined, per_judge)

    def pass_rates(self) -> dict[str, float]:
        """Fraction satisfied per judge since the last reset (failures count as not passing)."""
        return {name: c[0] / max(sum(c), 1) for name, c in self._counts.items()}

    def failure_rates(self) -> dict[str, float]:
        return {name: c[2] / max(sum(c), 1) for name, c in self._counts.items()}

    def reset(self) -> None:
        self._counts.clear()
