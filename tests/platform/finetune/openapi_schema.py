"""Our responses checked against OpenAI's published OpenAPI description (openapi/
openai-subset.json, cut from github.com/openai/openai-openapi by openapi/extract.py): what
"OpenAI-compatible" means, measured by the spec rather than by what the SDK happens to parse.

Validation is openapi-schema-validator's OAS 3.1 dialect (JSON Schema 2020-12 with OpenAPI's
vocabulary: `anyOf` with `type: null` for nullable fields, formats as OpenAPI defines them); the
spec's schemas are used as published, but where they are known wrong (`_corrected`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema.exceptions import best_match
from openapi_schema_validator import OAS31Validator, oas31_format_checker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SUBSET = Path(__file__).with_name("openapi") / "openai-subset.json"
URI = "urn:openai-openapi-subset"


@cache
def spec() -> dict[str, Any]:
    return _corrected(json.loads(SUBSET.read_text()))


def _corrected(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec where it is known wrong (each correction says how it knows)."""
    schemas = spec["components"]["schemas"]
    _named_graders(schemas["GraderMulti"]["properties"])
    _paused(schemas["FineTuningJob"]["properties"]["status"])
    _exclusive_minimum(spec)
    return spec


def _named_graders(multi: dict[str, Any]) -> None:
    """A multigrader's `graders` is a map of named graders (what `calculate_output` names, and
    what OpenAI's graders guide and its API take: the API refuses the spec's single grader,
    openai/openai-java#647), where the spec says one grader. Should the spec be fixed, the
    assertion fails and this correction goes."""
    assert set(multi["graders"]) == {"oneOf"}, "GraderMulti.graders changed upstream"
    multi["graders"] = {"type": "object", "additionalProperties": multi["graders"]}


def _paused(status: dict[str, Any]) -> None:
    """A paused job's status is `paused`, as the spec's own example of POST .../pause answers,
    but its enum of statuses lacks it."""
    assert "paused" not in status["enum"], "FineTuningJob.status has `paused` upstream"
    status["enum"] = [*status["enum"], "paused"]


def _exclusive_minimum(node: Any) -> None:
    """OpenAPI 3.0's `minimum: M, exclusiveMinimum: true` written in this 3.1 document, where
    `exclusiveMinimum` is the bound itself (a boolean reads as the number 1, and refuses a
    `learning_rate_multiplier` of 1.0): rewritten as 3.1's `exclusiveMinimum: M`."""
    if isinstance(node, dict):
        if node.get("exclusiveMinimum") is True and "minimum" in node:
            node["exclusiveMinimum"] = node.pop("minimum")
        for value in node.values():
            _exclusive_minimum(value)
    elif isinstance(node, list):
        for value in node:
            _exclusive_minimum(value)


@cache
def _registry() -> Registry:
    resource = Resource.from_contents(spec(), default_specification=DRAFT202012)
    return Registry().with_resource(URI, resource)


def _escaped(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def schema_pointer(path: str, method: str, status: int = 200) -> str:
    """The JSON pointer, in the subset, of an operation's JSON response schema. `path` is
    OpenAI's template (`/files/{file_id}`), with or without our `/v1` prefix."""
    path = path.removeprefix("/v1")
    operations = spec()["paths"].get(path)
    if operations is None or method.lower() not in operations:
        raise KeyError(f"{method.upper()} {path} is not in {SUBSET.name} (see extract.py)")
    pointer = ["paths", path, method.lower(), "responses", str(status)]
    response = operations[method.lower()]["responses"].get(str(status))
    if response is None:
        raise KeyError(f"{method.upper()} {path} describes no {status} response")
    if "$ref" in response:  # a shared response, `#/components/responses/NAME`
        pointer = response["$ref"].removeprefix("#/").split("/")
    return "/" + "/".join(_escaped(p) for p in [*pointer, "content", "application/json", "schema"])


def assert_conforms(body: Any, path: str, method: str, status: int = 200) -> None:
    """AssertionError naming where `body` breaks the spec's response schema of that operation."""
    schema = {"$ref": f"{URI}#{schema_pointer(path, method, status)}"}
    validator = OAS31Validator(schema, registry=_registry(), format_checker=oas31_format_checker)
    error = best_match(validator.iter_errors(body))
    if error is not None:
        where = error.json_path
        raise AssertionError(
            f"{method.upper()} {path} {status}: {where}: {error.message} "
            f"(schema {'/'.join(map(str, error.schema_path))})"
        )


def checked(raw_call: Callable[..., Any], path: str, method: str, **kwargs: Any) -> Any:
    """What the SDK parses from a `with_raw_response` call, once its JSON conforms:
    `checked(client.files.with_raw_response.retrieve, "/files/{file_id}", "get", file_id=x)`."""
    response = raw_call(**kwargs)
    assert_conforms(response.http_response.json(), path, method, response.http_response.status_code)
    return response.parse()
