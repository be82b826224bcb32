"""The spec check itself (openapi_schema.py): it passes what OpenAI's schema allows, fails what it
does not and says where, and the committed subset is whole (every `$ref` resolves in it, every
operation the tests and the fine-tuning jobs need is there, its source commit recorded)."""

from __future__ import annotations

import importlib.util
import re

import pytest
from openapi_schema import SUBSET, assert_conforms, spec

MODEL = {"id": "tiny", "object": "model", "created": 1700000000, "owned_by": "rlguard"}
EXTRACT = SUBSET.with_name("extract.py")


def extract_module():  # type: ignore[no-untyped-def]
    loaded = importlib.util.spec_from_file_location("openapi_extract", EXTRACT)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def test_a_conforming_body_passes_and_v1_is_optional() -> None:
    assert_conforms(MODEL, "/models/{model}", "get")
    assert_conforms({"object": "list", "data": [MODEL]}, "/v1/models", "GET")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({k: v for k, v in MODEL.items() if k != "owned_by"}, r"\$: 'owned_by' is a required"),
        ({**MODEL, "created": "yesterday"}, r"\$.created: 'yesterday' is not of type 'integer'"),
        ({"object": "list", "data": [{**MODEL, "object": "x"}]}, r"\$.data\[0\].object: 'x'"),
    ],
)
def test_a_body_that_breaks_the_schema_fails_saying_where(body: dict, said: str) -> None:
    with pytest.raises(AssertionError, match=said):
        path = "/models" if "data" in body else "/models/{model}"
        assert_conforms(body, path, "get")


def test_nullable_fields_take_null_as_the_spec_says() -> None:
    """`FineTuningJob.fine_tuned_model` is `anyOf: [string, null]`; `OpenAIFile.status_details`
    is a plain string (our files leave it out)."""
    job_schema = spec()["components"]["schemas"]["FineTuningJob"]["properties"]
    assert {"type": "null"} in job_schema["fine_tuned_model"]["anyOf"]
    file = {"id": "file-1", "object": "file", "bytes": 1, "created_at": 1, "filename": "a"}
    file |= {"purpose": "fine-tune", "status": "processed"}
    assert_conforms(file, "/files/{file_id}", "get")
    with pytest.raises(AssertionError, match="status_details: None is not of type 'string'"):
        assert_conforms({**file, "status_details": None}, "/files/{file_id}", "get")


def test_a_multigrader_takes_named_graders() -> None:
    check = {"type": "string_check", "name": "x", "input": "a", "reference": "b", "operation": "eq"}
    multi = {"type": "multi", "name": "m", "graders": {"x": check}, "calculate_output": "x"}
    assert_conforms({"grader": multi}, "/fine_tuning/alpha/graders/validate", "post")
    with pytest.raises(AssertionError, match="grader"):
        bad = {**multi, "graders": {"x": {**check, "operation": "glob"}}}
        assert_conforms({"grader": bad}, "/fine_tuning/alpha/graders/validate", "post")


JOB = {
    "id": "ftjob-1",
    "object": "fine_tuning.job",
    "created_at": 1,
    "error": None,
    "finished_at": None,
    "fine_tuned_model": None,
    "hyperparameters": {"batch_size": 1, "learning_rate_multiplier": 1.0, "n_epochs": 1},
    "model": "tiny",
    "organization_id": "acme",
    "result_files": [],
    "status": "queued",
    "trained_tokens": None,
    "training_file": "file-1",
    "validation_file": None,
    "seed": 7,
}


@pytest.mark.parametrize("multiplier", [1.0, 0.001, "auto"])
def test_a_positive_learning_rate_multiplier_conforms(multiplier: float | str) -> None:
    """The spec's 3.0-style `exclusiveMinimum: true` means "above 0", not "above 1"."""
    settings = {**JOB["hyperparameters"], "learning_rate_multiplier": multiplier}
    body = {**JOB, "hyperparameters": settings}
    assert_conforms(body, "/fine_tuning/jobs/{fine_tuning_job_id}", "get")


def test_a_zero_multiplier_and_an_unknown_status_do_not_conform_but_paused_does() -> None:
    zero = {**JOB, "hyperparameters": {**JOB["hyperparameters"], "learning_rate_multiplier": 0}}
    with pytest.raises(AssertionError, match="learning_rate_multiplier"):
        assert_conforms(zero, "/fine_tuning/jobs", "post")
    assert_conforms(
        {**JOB, "status": "paused"}, "/fine_tuning/jobs/{fine_tuning_job_id}/pause", "post"
    )
    with pytest.raises(AssertionError, match="'stopping' is not one of"):
        assert_conforms({**JOB, "status": "stopping"}, "/fine_tuning/jobs", "post")


def test_an_operation_or_status_not_in_the_subset_is_a_key_error() -> None:
    with pytest.raises(KeyError, match=r"GET /batches is not in openai-subset\.json"):
        assert_conforms({}, "/batches", "get")
    with pytest.raises(KeyError, match="describes no 404 response"):
        assert_conforms({}, "/models", "get", status=404)


def test_the_subset_is_whole_and_names_its_source() -> None:
    subset = spec()
    assert re.fullmatch(r"[0-9a-f]{40}", subset["info"]["x-source"]["commit"])
    extract = extract_module()
    for path, methods in extract.OPERATIONS.items():
        assert set(methods) <= set(subset["paths"][path]), path
    for ref in extract.refs(subset):
        _, kind, name = ref.removeprefix("#/").split("/")
        assert name in subset["components"][kind], ref


def test_the_error_schema_of_a_429_is_openais_error_shape() -> None:
    body = {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": None}}
    assert_conforms(body, "/chat/completions", "post", status=429)
    with pytest.raises(AssertionError, match="'message' is a required property"):
        assert_conforms({"error": {"type": "x"}}, "/chat/completions", "post", status=429)
