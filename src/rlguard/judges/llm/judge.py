"""CGPO's LLM classifier judges: a yes/no template, scored by the judge model's next token."""

from __future__ import annotations

from collections.abc import Sequence

from rlguard.judges.base import (
    Judge,
    Metadata,
    MissingMetadata,
    Verdict,
    _check_lengths,
    failed,
    satisfied,
    violated,
)
from rlguard.judges.llm.backend import ClassifierBackend
from rlguard.judges.llm.templates import TEMPLATES, JudgeTemplate


class LLMJudge(Judge):
    """Satisfied when p(positive) / (p(positive) + p(negative)) exceeds `threshold`.

    The judge is named after its template, so several LLM judges can sit in one mixture. Samples
    lacking required metadata and samples the backend cannot score get -1, never a violation.
    """

    def __init__(
        self, template: JudgeTemplate, backend: ClassifierBackend, threshold: float = 0.5
    ) -> None:
        if not 0.0 <= threshold < 1.0:
            raise ValueError(f"threshold must be in [0, 1), got {threshold}")
        self.name = template.name  # shadows the ClassVar: one class, many named judges
        self.template = template
        self.backend = backend
        self.threshold = threshold

    @classmethod
    def from_template(
        cls, name: str, backend: ClassifierBackend, threshold: float = 0.5
    ) -> LLMJudge:
        """A judge from one of the built-in TEMPLATES (false_refusal, factuality, safety)."""
        if name not in TEMPLATES:
            raise KeyError(f"unknown judge template {name!r}; known: {sorted(TEMPLATES)}")
        return cls(TEMPLATES[name], backend, threshold)

    def evaluate(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[Verdict]:
        _check_lengths(prompts, completions, metadata)
        verdicts: dict[int, Verdict] = {}
        texts, slots = [], []
        rows = zip(prompts, completions, metadata, strict=True)
        for i, (prompt, completion, meta) in enumerate(rows):
            try:
                texts.append(self.template.render(prompt, completion, meta))
                slots.append(i)
            except MissingMetadata as exc:
                verdicts[i] = failed(str(exc))
        for i, verdict in zip(slots, self._score(texts), strict=True):
            verdicts[i] = verdict
        return [verdicts[i] for i in range(len(prompts))]

    def _score(self, texts: list[str]) -> list[Verdict]:
        if not texts:
            return []
        positive, negative = self.template.positive, self.template.negative
        try:
            probs = self.backend.positive_probability(texts, positive, negative)
            if len(probs) != len(texts):
                raise ValueError(f"backend scored {len(probs)} of {len(texts)} texts")
        except Exception as exc:  # an unreachable judge fails its samples, never training
            return [failed(f"judge backend: {type(exc).__name__}: {exc}")] * len(texts)
        return [self._verdict(p) for p in probs]

    def _verdict(self, prob: float | None) -> Verdict:
        if prob is None:
            labels = f"{self.template.positive!r} nor {self.template.negative!r}"
            return failed(f"neither {labels} among the judge model's top tokens")
        reason = f"p({self.template.label})={prob:.3g}"
        return satisfied(reason) if prob > self.threshold else violated(reason)
