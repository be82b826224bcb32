"""An OpenAI grader as one of CGPO's judges: a response satisfies it when the grader (or one
named sub-grader of a multigrader) scores it at least `pass_threshold`, the field OpenAI's evals
give a grader. So a reinforcement job's multigrader can name constraints (`"right"` must score
1) that CGPO enforces, while `calculate_output` stays its reward."""

from __future__ import annotations

from typing import ClassVar

from rlguard.judges.base import Judge, Metadata, Verdict, failed, satisfied, violated
from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.multi import MultiGrader
from rlguard.judges.graders.reward import load_grader
from rlguard.judges.graders.templates import sample_of


class GraderJudge(Judge):
    name: ClassVar[str] = "grader"

    def __init__(self, grader: str, sub_grader: str | None, pass_threshold: float) -> None:
        self.grader, self.sub_grader, self.pass_threshold = grader, sub_grader, pass_threshold
        if sub_grader is not None:  # each constraint's pass rate under its own name
            self.name = f"grader.{sub_grader}"  # type: ignore[misc]

    def check(self, prompt: str, completion: str, metadata: Metadata) -> Verdict:
        grader = load_grader(self.grader)
        named = self.sub_grader or grader.name
        if self.sub_grader is not None:
            if not isinstance(grader, MultiGrader) or self.sub_grader not in grader.graders:
                return failed(f"{self.grader} has no sub-grader {self.sub_grader!r}")
            grader = grader.graders[self.sub_grader]
        try:
            reward = grader.grade(sample_of(completion), dict(metadata)).reward
        except GraderError as e:
            return failed(e.message)
        if reward >= self.pass_threshold:
            return satisfied(f"{named} scored {reward:.3f}")
        return violated(f"{named} scored {reward:.3f} < {self.pass_threshold}")
