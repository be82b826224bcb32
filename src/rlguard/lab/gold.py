"""The gold scorer: the world feedback. Judges plus task correctness, per task, in [0, 1].

The policy never trains on it; the proxy reward model was fitted to preferences it labelled.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from rlguard.lab.tasks import TASKS, Row


class GoldScorer:
    """A reward function (prompts, completions) -> gold, for prompts of the world it knows."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self.rows = {row.prompt: row for row in rows}

    def __call__(self, prompts: Sequence[str], completions: Sequence[str]) -> list[float]:
        by_task: dict[str, list[int]] = defaultdict(list)
        for i, prompt in enumerate(prompts):
            if prompt not in self.rows:
                raise KeyError(f"the gold scorer does not know the prompt {prompt!r}")
            by_task[self.rows[prompt].task].append(i)
        scores = [0.0] * len(prompts)
        for task, index in by_task.items():
            rows = [self.rows[prompts[i]] for i in index]
            for i, value in zip(
                index, TASKS[task].gold(rows, [completions[i] for i in index]), strict=True
            ):
                scores[i] = value
        return scores
