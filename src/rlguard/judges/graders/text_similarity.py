"""`text_similarity`: a score in [0, 1] of the rendered input against the reference, each
metric through the library the field uses for it.

- fuzzy_match: rapidfuzz's `fuzz.ratio` / 100 (1 - the normalized InDel distance, on
  characters; symmetric, 1.0 only for equal strings).
- bleu: sacrebleu's `sentence_bleu` / 100 (its 13a tokenizer and exponential smoothing: the
  reproducible BLEU of Post 2018; NLTK's unsmoothed BLEU is 0 for any text of under 4 words).
- gleu: NLTK's `sentence_gleu` (Google's sentence BLEU; sacrebleu has none), on sacrebleu's 13a
  tokens, so BLEU and GLEU count the same words.
- meteor: NLTK's `meteor_score` on the same tokens (lowercased, Porter stems); its synonym stage
  uses NLTK's WordNet where the operator installed it (`python -m nltk.downloader wordnet`), and
  matches exact words and stems only where not (meteor_synonyms says which).
- rouge_1..rouge_5, rouge_l: the F-measure of Google's `rouge-score` (ROUGE-N, ROUGE-L), with
  its own tokenizer: lowercase ASCII letters and digits only, so text in other scripts scores 0.
- cosine: needs an embedding model; none is registered, so it is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

import sacrebleu
from pydantic import field_validator
from rapidfuzz import fuzz
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from rlguard.judges.graders import templates
from rlguard.judges.graders.base import Grade, Grader

Metric = Literal[
    "cosine",
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
]
_tokens = Tokenizer13a()


class _NoSynonyms:
    """METEOR's WordNet where none is installed: no word has a synonym."""

    def synsets(self, word: str) -> list[Any]:
        return []


@functools.cache
def meteor_synonyms() -> Any:
    """NLTK's WordNet if the operator installed it, else _NoSynonyms."""
    import nltk  # NLTK and rouge-score (which imports it) load on first use: seconds, once

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        return _NoSynonyms()
    return nltk.corpus.wordnet


def _gleu(given: str, reference: str) -> float:
    from nltk.translate.gleu_score import sentence_gleu

    return sentence_gleu([_words(reference)], _words(given))


def _meteor(given: str, reference: str) -> float:
    from nltk.translate.meteor_score import meteor_score

    return meteor_score([_words(reference)], _words(given), wordnet=meteor_synonyms())


def _words(text: str) -> list[str]:
    return _tokens(text).split()


def _rouge(kind: str) -> Callable[[str, str], float]:
    @functools.cache
    def scorer() -> Any:
        from rouge_score.rouge_scorer import RougeScorer

        return RougeScorer([kind])

    return lambda given, reference: scorer().score(reference, given)[kind].fmeasure


METRICS: dict[str, Callable[[str, str], float]] = {
    "fuzzy_match": lambda given, reference: fuzz.ratio(given, reference) / 100,
    "bleu": lambda given, reference: sacrebleu.sentence_bleu(given, [reference]).score / 100,
    "gleu": _gleu,
    "meteor": _meteor,
    **{f"rouge_{n}": _rouge(f"rouge{n}") for n in range(1, 6)},
    "rouge_l": _rouge("rougeL"),
}


class TextSimilarityGrader(Grader):
    type: Literal["text_similarity"]
    input: templates.Template
    reference: templates.Template
    evaluation_metric: Metric

    @field_validator("evaluation_metric")
    @classmethod
    def _served(cls, metric: str) -> str:
        if metric == "cosine":
            raise ValueError(
                "cosine needs an embedding model, and no embedding model is registered"
            )
        return metric

    def grade(self, sample: dict[str, Any], item: Any, at: str = "grader") -> Grade:
        given = templates.render(self.input, sample, item, f"{at}.input")
        reference = templates.render(self.reference, sample, item, f"{at}.reference")
        score = METRICS[self.evaluation_metric](given, reference)
        return Grade(min(max(score, 0.0), 1.0))  # sacrebleu's 100.00000000000004 is 1.0
