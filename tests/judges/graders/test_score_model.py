"""OpenAI's `score_model` grader on a real local model: tiny_scorer's Llama, taught to answer 1
when an answer names Paris and 0 when it does not, scores through the grader's templates, its
`range`, and, as a training reward, from a grader file naming the model's directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.score_model import LocalModels, score_in
from rlguard.judges.graders.templates import sample_of
from rlguard.train.config import RewardSpec
from rlguard.train.rewards import load_reward, score
from tiny_scorer import ASK, scorer_model

SCORER = {
    "type": "score_model",
    "name": "capital",
    "model": "scorer",
    "input": [{"role": "user", "content": ASK + "{{sample.output_text}}"}],
    "sampling_params": {"temperature": 0, "max_completions_tokens": 4},
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> LocalModels:
    return LocalModels({"scorer": str(scorer_model(tmp_path_factory.mktemp("scorer")))})


def grade(grader: dict[str, Any], models: LocalModels, sample: str, item: Any = None) -> Any:
    return parse_grader(grader, models=models).grade(sample_of(sample), item or {})


def test_the_models_answer_is_the_reward_with_its_token_usage(models: LocalModels) -> None:
    right, wrong = grade(SCORER, models, "Paris"), grade(SCORER, models, "London")
    assert (right.reward, wrong.reward) == (1.0, 0.0)
    assert not right.errors and not wrong.errors
    usage = right.usage["scorer"]
    assert usage["completion_tokens"] == 2  # "1" and the EOS
    assert usage["total_tokens"] == usage["prompt_tokens"] + 2 > 10


def test_content_parts_and_item_templates_are_rendered(models: LocalModels) -> None:
    parts = [{"type": "input_text", "text": ASK}, {"type": "input_text", "text": "{{item.city}}"}]
    grader = {**SCORER, "input": [{"role": "user", "content": parts, "type": "message"}]}
    assert grade(grader, models, "ignored", {"city": "Paris"}).reward == 1.0
    with pytest.raises(GraderError) as missing:
        grade(grader, models, "ignored", {"town": "Paris"})
    assert missing.value.param == "grader.input.0"


def test_an_answer_outside_the_range_scores_0_with_a_parse_error(models: LocalModels) -> None:
    got = grade({**SCORER, "range": [2, 5]}, models, "Paris")  # the model says 1
    assert got.reward == 0.0 and got.errors == {"model_grader_parse_error": True}


def test_a_prompt_past_the_models_context_is_a_server_error_not_a_request_error(
    models: LocalModels,
) -> None:
    got = grade(SCORER, models, "Paris " * 400)  # the scorer's context is 128 tokens
    assert got.reward == 0.0 and got.errors["model_grader_server_error"] is True
    assert "context" in got.errors["model_grader_server_error_details"]


def test_a_multigrader_sums_its_sub_graders_usage_and_keeps_their_scores(
    models: LocalModels,
) -> None:
    exact = {
        "type": "string_check",
        "name": "exact",
        "input": "{{sample.output_text}}",
        "reference": "Paris",
        "operation": "eq",
    }
    multi = {
        "type": "multi",
        "name": "both",
        "graders": {"judged": SCORER, "again": SCORER, "exact": exact},
        "calculate_output": "(judged + again + exact) / 3",
    }
    got = grade(multi, models, "Paris")
    assert got.reward == 1.0 and got.sub_rewards == {"judged": 1.0, "again": 1.0, "exact": 1.0}
    one = grade(SCORER, models, "Paris").usage["scorer"]
    assert got.usage["scorer"] == {k: 2 * v for k, v in one.items()}


@pytest.mark.parametrize(
    ("change", "models_here", "field", "said"),
    [
        ({}, False, "grader.model", "no model can score here"),
        ({"model": "gpt-4o"}, True, "grader.model", "not a model available to score here"),
        ({"range": [1, 0]}, True, "grader.range", "the lower first"),
        ({"input": []}, True, "grader.input", "at least 1 item"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            True,
            "grader.input.0.content",
            "only text content parts",
        ),
        ({"sampling_params": {"reasoning_effort": "max"}}, True, "reasoning_effort", '(got "max")'),
        ({"sampling_params": {"temperature": 3}}, True, "temperature", "less than or equal"),
        ({"input": [{"role": "user", "content": "{{answer}}"}]}, True, "grader.input.0", "item."),
    ],
    ids=["no models", "unknown", "range", "no input", "image", "effort", "temperature", "template"],
)
def test_bad_score_model_graders_are_refused_naming_the_field(
    models: LocalModels, change: dict[str, Any], models_here: bool, field: str, said: str
) -> None:
    with pytest.raises(GraderError) as refused:
        parse_grader({**SCORER, **change}, models=models if models_here else None)
    assert field in refused.value.param and said in refused.value.message


@pytest.mark.parametrize(
    ("text", "bounds", "score"),
    [
        ("0.75", (0, 1), 0.75),
        ('{"steps": [], "result": 0.25}', (0, 1), 0.25),
        ("I would say 7 out of 10.", (0, 10), 7.0),
        ("score: 1e-1", (0, 1), 0.1),
        ("-3", (-5, 5), -3.0),
        ("7", (0, 1), None),
        ("no number", (0, 1), None),
        ('{"result": "high"}', (0, 1), None),
    ],
)
def test_a_score_is_read_from_json_or_the_first_number(
    text: str, bounds: tuple[float, float], score: float | None
) -> None:
    assert score_in(text, bounds) == score


def test_as_a_training_reward_the_grader_file_names_its_models_directory(
    models: LocalModels, tmp_path: Path
) -> None:
    path = tmp_path / "grader.json"
    path.write_text(json.dumps({"grader": SCORER, "models": models.paths}))
    spec = RewardSpec(function="rlguard.judges.graders.reward:grade", options={"grader": str(path)})
    got = score(load_reward(spec, "reward"), ["q", "q"], ["Paris", "Rome"], metadata=[{}, {}])
    assert got.tolist() == [1.0, 0.0]
