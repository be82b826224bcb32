"""`text_similarity`: every metric against a direct call of the library it wraps, on pairs of
texts from equal to disjoint; its scale anchored (equal texts 1.0, disjoint 0.0); `cosine`
refused with the reason."""

from __future__ import annotations

import pytest
import sacrebleu
from nltk.translate.gleu_score import sentence_gleu
from nltk.translate.meteor_score import meteor_score
from rapidfuzz import fuzz
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

import import_graph
from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.templates import sample_of
from rlguard.judges.graders.text_similarity import meteor_synonyms

PAIRS = [  # (model output, reference)
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("a cat sat on a mat", "The cat sat on the mat."),
    ("the quick brown fox jumps over the lazy dog", "a quick brown dog jumps over the lazy fox"),
    (
        "It is a guide to action which ensures that the military always obeys the commands of "
        "the party",
        "It is a guide to action that ensures that the military will forever heed Party commands",
    ),
    ("Paris", "The capital of France is Paris"),
    ("completely different words here", "nothing in common at all"),
]


def words(text: str) -> list[str]:
    return Tokenizer13a()(text).split()


def rouge(kind: str, given: str, reference: str) -> float:
    return RougeScorer([kind]).score(reference, given)[kind].fmeasure


LIBRARY = {
    "fuzzy_match": lambda g, r: fuzz.ratio(g, r) / 100,
    "bleu": lambda g, r: min(sacrebleu.sentence_bleu(g, [r]).score / 100, 1.0),
    "gleu": lambda g, r: sentence_gleu([words(r)], words(g)),
    "meteor": lambda g, r: meteor_score([words(r)], words(g), wordnet=meteor_synonyms()),
    **{f"rouge_{n}": (lambda g, r, n=n: rouge(f"rouge{n}", g, r)) for n in range(1, 6)},
    "rouge_l": lambda g, r: rouge("rougeL", g, r),
}


def score(metric: str, given: str, reference: str) -> float:
    grader = parse_grader(
        {
            "type": "text_similarity",
            "name": "similar",
            "input": "{{sample.output_text}}",
            "reference": "{{item.reference}}",
            "evaluation_metric": metric,
        }
    )
    return grader.grade(sample_of(given), {"reference": reference}).reward


@pytest.mark.parametrize("metric", LIBRARY)
@pytest.mark.parametrize(("given", "reference"), PAIRS)
def test_every_metric_is_its_library(metric: str, given: str, reference: str) -> None:
    assert score(metric, given, reference) == pytest.approx(LIBRARY[metric](given, reference))


@pytest.mark.parametrize("metric", [m for m in LIBRARY if m != "meteor"])
def test_equal_texts_score_one_and_disjoint_texts_zero(metric: str) -> None:
    assert score(metric, "The cat sat on the mat.", "The cat sat on the mat.") == 1.0
    assert score(metric, "aabbcc", "xxyyzz") == 0.0


def test_meteor_rewards_word_order_and_stems() -> None:
    """METEOR's fragmentation penalty keeps even an equal text below 1; stems match."""
    assert 0.99 < score("meteor", "the cats sat on the mat", "the cats sat on the mat") < 1.0
    stems = score("meteor", "the cats were sitting", "the cat was sitting")
    assert stems > score("meteor", "the dogs were running", "the cat was sitting")


def test_partial_overlap_orders_as_expected() -> None:
    close, far = PAIRS[1], PAIRS[4]
    for metric in ("fuzzy_match", "bleu", "rouge_1", "rouge_l"):
        assert 0 < score(metric, *far) < score(metric, *close) < 1, metric


def test_cosine_is_refused_naming_the_missing_embedding_model() -> None:
    with pytest.raises(GraderError, match="no embedding model is registered") as refused:
        score("cosine", "a", "b")
    assert refused.value.param == "grader.evaluation_metric"


def test_the_server_loads_nltk_and_rouge_score_only_when_a_grader_needs_them() -> None:
    """Their import takes seconds: `rlguard serve` should not pay it at start."""
    code = "import rlguard.platform.finetune.grader_routes"
    assert import_graph.imported_after(code, ("nltk", "rouge_score")) == set()
