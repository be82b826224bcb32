"""OpenAI's grader endpoints through the official `openai` SDK against the app on loopback:
validate and run parse into the SDK's own types, and conform to OpenAI's published OpenAPI
description, for every grader type; bad input is a 4xx in OpenAI's error shape naming the
field, at validate where no sample is needed to see it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.fine_tuning.alpha import GraderRunResponse, GraderValidateResponse
from openapi_schema import checked
from sdk_server import served

from hostile_programs import LIMITS
from rlguard.judges.graders import python
from rlguard.platform.finetune.base_models import parse_model
from tiny_scorer import ASK, scorer_model

STRING_CHECK = {
    "type": "string_check",
    "name": "exact",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "eq",
}
SIMILAR = {
    "type": "text_similarity",
    "name": "similar",
    "input": "{{sample.output_json.capital}}",
    "reference": "{{item.capital}}",
    "evaluation_metric": "fuzzy_match",
}
PYTHON = {
    "type": "python",
    "name": "py",
    "source": "def grade(sample, item):\n    return len(sample['output_text']) / item['length']",
}
MULTI = {
    "type": "multi",
    "name": "both",
    "graders": {"exact": STRING_CHECK, "long": PYTHON},
    "calculate_output": "0.75 * exact + 0.25 * min(long, 1)",
}
GRADERS = "/fine_tuning/alpha/graders"
SCORE_MODEL = {  # on tiny_scorer's model, registered as the operator's base model "scorer"
    "type": "score_model",
    "name": "judge",
    "model": "scorer",
    "input": [{"role": "user", "content": ASK + "{{sample.output_text}}"}],
    "range": [0, 1],
    "sampling_params": {"temperature": 0, "max_completions_tokens": 4},
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    scorer = scorer_model(tmp_path_factory.mktemp("scorer") / "model")
    models = [parse_model(f"scorer={scorer}")]
    with served(tmp_path_factory.mktemp("graders"), models=models) as (client, _):
        yield client


def run(client: openai.OpenAI, grader: dict[str, Any], sample: str, item: Any) -> GraderRunResponse:
    call = client.fine_tuning.alpha.graders.with_raw_response.run
    return checked(call, f"{GRADERS}/run", "post", grader=grader, model_sample=sample, item=item)


@pytest.mark.parametrize(
    ("grader", "sample", "item", "reward"),
    [
        (STRING_CHECK, "4", {"answer": "4"}, 1.0),
        (STRING_CHECK, "5", {"answer": "4"}, 0.0),
        (SIMILAR, '{"capital": "Pariss"}', {"capital": "Paris"}, 10 / 11),
        (PYTHON, "four", {"length": 8}, 0.5),
        (MULTI, "4", {"answer": "4", "length": 2}, 0.75 + 0.25 * 0.5),
        (SCORE_MODEL, "Paris", {}, 1.0),
        (SCORE_MODEL, "London", {}, 0.0),
    ],
    ids=[
        *("string_check-pass", "string_check-fail", "text_similarity", "python", "multi"),
        *("score_model-pass", "score_model-fail"),
    ],
)
def test_validate_and_run_round_trip_through_the_sdk(
    client: openai.OpenAI, grader: dict[str, Any], sample: str, item: Any, reward: float
) -> None:
    call = client.fine_tuning.alpha.graders.with_raw_response.validate
    valid = checked(call, f"{GRADERS}/validate", "post", grader=grader)
    assert isinstance(valid, GraderValidateResponse)
    assert valid.grader is not None and valid.grader.to_dict() == grader
    got = run(client, grader, sample, item)
    assert isinstance(got, GraderRunResponse)
    assert got.reward == pytest.approx(reward)
    assert (got.metadata.name, got.metadata.type) == (grader["name"], grader["type"])
    assert not any(v for v in got.metadata.errors.to_dict().values())
    assert got.metadata.execution_time >= 0
    assert got.sub_rewards == ({"exact": 1.0, "long": 0.5} if grader is MULTI else {})
    scored = grader is SCORE_MODEL
    assert got.metadata.sampled_model_name == ("scorer" if scored else None)
    usage = got.model_grader_token_usage_per_model
    assert (got.metadata.token_usage or 0) == (usage["scorer"]["total_tokens"] if scored else 0)


def test_a_score_model_answer_out_of_range_is_flagged_not_refused(client: openai.OpenAI) -> None:
    got = run(client, {**SCORE_MODEL, "range": [2, 5]}, "Paris", {})  # the model says 1
    assert got.reward == 0.0 and got.metadata.errors.model_grader_parse_error


BAD = {  # what is wrong: (grader, item, the field named, words of the message)
    "unknown type": ({**STRING_CHECK, "type": "regex"}, {}, "grader.type", "unknown grader type"),
    "unknown operation": (
        {**STRING_CHECK, "operation": "glob"},
        {},
        "grader.operation",
        '(got "glob")',
    ),
    "missing field": (
        {k: v for k, v in STRING_CHECK.items() if k != "reference"},
        {},
        "grader.reference",
        "Field required",
    ),
    "missing template field": (
        STRING_CHECK,
        {"reply": "4"},
        "grader.reference",
        "template {{item.answer}} names item.answer",
    ),
    "bad namespace": (
        {**STRING_CHECK, "input": "{{output.text}}"},
        {},
        "grader.input",
        "must start with 'item.'",
    ),
    "unknown metric": (
        {**SIMILAR, "evaluation_metric": "chrf"},
        {},
        "grader.evaluation_metric",
        '(got "chrf")',
    ),
    "cosine": (
        {**SIMILAR, "evaluation_metric": "cosine"},
        {},
        "grader.evaluation_metric",
        "no embedding model is registered",
    ),
    "python raises": (PYTHON, {"length": 0}, "grader.source", "ZeroDivisionError"),
    "python loops": (
        {
            **PYTHON,
            "source": "import time\ndef grade(s, i):\n    while True:\n        time.sleep(1)",
        },
        {},
        "grader.source",
        "timeout after 2.5 s",
    ),
    "python returns no number": (
        {**PYTHON, "source": "def grade(s, i):\n    return 'high'"},
        {},
        "grader.source",
        "not str",
    ),
    "formula": (
        {**MULTI, "calculate_output": "exact if long else 0"},
        {},
        "grader.calculate_output",
        "not a formula",
    ),
    "formula without a value": (
        {**MULTI, "calculate_output": "exact / (long - 0.5)"},
        {"answer": "4", "length": 2},
        "grader.calculate_output",
        "division by zero",
    ),
    "sub-grader": (MULTI, {"answer": "4"}, "grader.graders.long.source", "KeyError: 'length'"),
    "score_model": (
        {**SCORE_MODEL, "model": "gpt-4o-2024-08-06"},
        {},
        "grader.model",
        "the model does not exist or is not available to you",
    ),
    "python image": (
        {**PYTHON, "image_tag": "latest"},
        {"length": 1},
        "grader.image_tag",
        '(got "latest")',
    ),
}


@pytest.mark.parametrize(("grader", "item", "param", "said"), BAD.values(), ids=list(BAD))
def test_bad_input_is_a_400_naming_the_field(
    client: openai.OpenAI,
    grader: dict[str, Any],
    item: Any,
    param: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(python, "LIMITS", LIMITS)  # a loop ends after 2.5 s, not 10
    with pytest.raises(openai.BadRequestError) as refused:
        run(client, grader, "4", item)
    body = refused.value.body
    assert isinstance(body, dict) and body["param"] == param and said in body["message"]
    assert body["type"] == "invalid_request_error"


NO_SAMPLE_NEEDED = [  # what validate refuses as run does
    *("unknown type", "unknown operation", "missing field", "bad namespace", "unknown metric"),
    *("cosine", "formula", "score_model", "python image"),
]
LOADING = "def grade(s, i):\n    return 1.0\n"
BAD_TO_VALIDATE = {
    **{name: (BAD[name][0], BAD[name][2], BAD[name][3]) for name in NO_SAMPLE_NEEDED},
    "python imports what the sandbox lacks": (
        {**PYTHON, "source": "import numpy\n" + LOADING},
        "grader.source",
        "ModuleNotFoundError: No module named 'numpy' at source line 1",
    ),
    "python raises as it loads": (
        {**PYTHON, "source": LOADING + "raise RuntimeError('no config')"},
        "grader.source",
        "RuntimeError: no config at source line 3",
    ),
    "python loops as it loads": (
        {**PYTHON, "source": LOADING + "import time\nwhile True:\n    time.sleep(1)"},
        "grader.source",
        "timeout after 2.5 s",
    ),
    "python rebinds grade": (
        {**PYTHON, "source": LOADING + "grade = 3"},
        "grader.source",
        "grade must be a function once the source has run, not int",
    ),
    "multi's python sub-grader": (
        {**MULTI, "graders": {**MULTI["graders"], "long": {**PYTHON, "source": "x = 1 / 0"}}},
        "grader.graders.long.source",
        "no top-level function grade",
    ),
    "multi's python sub-grader as it loads": (
        {
            **MULTI,
            "graders": {**MULTI["graders"], "long": {**PYTHON, "source": "1 / 0\n" + LOADING}},
        },
        "grader.graders.long.source",
        "ZeroDivisionError: division by zero at source line 1",
    ),
}


@pytest.mark.parametrize(
    ("grader", "param", "said"), BAD_TO_VALIDATE.values(), ids=list(BAD_TO_VALIDATE)
)
def test_validate_refuses_what_it_can_see_without_a_sample(
    client: openai.OpenAI, grader: dict[str, Any], param: str, said: str, monkeypatch
) -> None:
    monkeypatch.setattr(python, "LIMITS", LIMITS)
    with pytest.raises(openai.BadRequestError) as refused:
        client.fine_tuning.alpha.graders.validate(grader=grader)
    body = refused.value.body
    assert isinstance(body, dict) and body["param"] == param and said in body["message"], body
