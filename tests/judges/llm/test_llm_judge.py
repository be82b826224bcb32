"""LLMJudge over a fake backend (verdict mapping) and over a tiny local HF model (probabilities)."""

from __future__ import annotations

import re

import pytest
import torch

from rlguard.judges.llm import TEMPLATES, HFBackend, JudgeTemplate, LLMJudge
from rlguard.judges.mixture import MixtureOfJudges
from tiny_models import tiny_causal_lm, tiny_tokenizer


class FakeBackend:
    def __init__(self, probs=None, error=None):
        self.probs, self.error, self.calls = probs, error, []

    def positive_probability(self, texts, positive, negative):
        self.calls.append((list(texts), positive, negative))
        if self.error:
            raise self.error
        return list(self.probs)


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer(400)  # large enough that " Yes" and " No" are single tokens


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_causal_lm(tokenizer)


def test_templates_name_judges_and_end_at_the_verdict():
    assert set(TEMPLATES) == {"false_refusal", "factuality", "safety"}
    assert TEMPLATES["factuality"].requires == ("answer",)
    for name, template in TEMPLATES.items():
        judge = LLMJudge.from_template(name, FakeBackend())
        assert judge.name == name
        assert template.text.endswith("Answer:")
    assert MixtureOfJudges([LLMJudge.from_template(n, FakeBackend()) for n in TEMPLATES]).names
    with pytest.raises(KeyError, match="unknown"):
        LLMJudge.from_template("helpfulness", FakeBackend())


def test_template_fields_must_match_requires():
    with pytest.raises(ValueError, match="fields"):
        JudgeTemplate("x", "{prompt} {completion} {answer}")
    with pytest.raises(ValueError, match="same"):
        JudgeTemplate("x", "{prompt} {completion}", positive=" Yes", negative="yes")


def test_verdicts_follow_threshold_with_probability_in_reason():
    backend = FakeBackend([0.83, 0.2, 0.5, 0.7])
    verdicts = LLMJudge(TEMPLATES["safety"], backend).evaluate(["p"] * 4, ["c"] * 4, [{}] * 4)
    assert [v.value for v in verdicts] == [1, 0, 0, 1]
    assert verdicts[0].reason == "p(yes)=0.83"
    strict = LLMJudge(TEMPLATES["safety"], backend, threshold=0.75)
    assert strict.judge(["p"] * 4, ["c"] * 4, [{}] * 4) == [1, 0, 0, 0]
    with pytest.raises(ValueError):
        LLMJudge(TEMPLATES["safety"], backend, threshold=1.0)


def test_prompt_completion_and_answer_are_rendered_in_order():
    backend = FakeBackend([0.9, 0.1])
    judge = LLMJudge.from_template("factuality", backend)
    judge.evaluate(
        ["Capital of France? {x}", "2+2?"], ["Paris", "5"], [{"answer": "Paris"}, {"answer": 4}]
    )
    texts, positive, negative = backend.calls[0]
    assert (positive, negative) == (" Yes", " No")
    assert "Capital of France? {x}" in texts[0] and "Paris" in texts[0]
    assert re.search(r"\[Reference answer\]\n<data-(\w+)>\n4\n</data-\1>\n", texts[1])


def test_missing_ground_truth_fails_only_that_sample():
    backend = FakeBackend([0.9])
    verdicts = LLMJudge.from_template("factuality", backend).evaluate(
        ["q1", "q2"], ["a1", "a2"], [{}, {"answer": "a2"}]
    )
    assert [v.value for v in verdicts] == [-1, 1]
    assert "answer" in verdicts[0].reason
    assert len(backend.calls[0][0]) == 1  # the unrenderable sample is never sent


def test_backend_errors_and_unscored_texts_are_failures():
    broken = LLMJudge.from_template("safety", FakeBackend(error=ConnectionError("refused")))
    verdicts = broken.evaluate(["p", "q"], ["c", "d"], [{}, {}])
    assert [v.value for v in verdicts] == [-1, -1]
    assert "refused" in verdicts[0].reason
    partial = LLMJudge.from_template("safety", FakeBackend([None, 0.9]))
    verdicts = partial.evaluate(["p", "q"], ["c", "d"], [{}, {}])
    assert [v.value for v in verdicts] == [-1, 1]
    assert "' Yes'" in verdicts[0].reason
    short = LLMJudge.from_template("safety", FakeBackend([0.9]))
    assert short.judge(["p", "q"], ["c", "d"], [{}, {}]) == [-1, -1]


def _reference_probability(model, tokenizer, text):
    """Unbatched forward, full softmax, then p(yes) / (p(yes) + p(no))."""
    ids = torch.tensor([tokenizer(text)["input_ids"]])
    with torch.no_grad():
        probs = torch.softmax(model(input_ids=ids).logits[0, -1].double(), -1)
    yes = tokenizer.encode(" Yes", add_special_tokens=False)[0]
    no = tokenizer.encode(" No", add_special_tokens=False)[0]
    return (probs[yes] / (probs[yes] + probs[no])).item()


def test_hf_probabilities_match_unbatched_softmax_under_left_padding(model, tokenizer):
    texts = [
        "Is the response safe? Answer:",
        "Question: what is 2 + 3? Think, then end with: The final answer is 5. Right? Answer:",
        "Yes",
        "Write three sentences about the sea, in lowercase. Answer:",
    ]
    expected = [_reference_probability(model, tokenizer, t) for t in texts]
    for batch_size in (1, 3, 4):
        got = HFBackend(model, tokenizer, batch_size).positive_probability(texts, " Yes", " No")
        assert got == pytest.approx(expected, abs=1e-5)
    assert len({round(p, 4) for p in expected}) > 1  # the texts really score differently


def test_hf_forced_logits_map_to_verdicts_and_threshold(tokenizer):
    model = tiny_causal_lm(tokenizer, seed=1)
    head = torch.nn.Linear(model.config.hidden_size, len(tokenizer), bias=True)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    model.lm_head = head
    yes = tokenizer.encode(" Yes", add_special_tokens=False)[0]
    no = tokenizer.encode(" No", add_special_tokens=False)[0]
    backend = HFBackend(model, tokenizer, batch_size=2)
    args = (["p1", "p2", "p3"], ["c1", "c2", "c3"], [{}] * 3)

    head.bias.data[yes] = 1.0  # p = sigmoid(1) ~ 0.731 for every text
    verdicts = LLMJudge.from_template("safety", backend).evaluate(*args)
    assert [v.value for v in verdicts] == [1, 1, 1]
    assert verdicts[0].reason == "p(yes)=0.731"
    assert LLMJudge.from_template("safety", backend, threshold=0.8).judge(*args) == [0, 0, 0]

    head.bias.data[no] = 3.0
    assert LLMJudge.from_template("false_refusal", backend).judge(*args) == [0, 0, 0]


def test_hf_labels_sharing_a_first_token_are_rejected(model):
    small = tiny_tokenizer(300)  # " Yes" and " No" both start with the byte token for " "
    backend = HFBackend(tiny_causal_lm(small), small)
    with pytest.raises(ValueError, match="same token"):
        backend.positive_probability(["x"], " Yes", " No")
    assert LLMJudge.from_template("safety", backend).judge(["p"], ["c"], [{}]) == [-1]
