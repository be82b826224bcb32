"""OpenAI's grader templates: `{{item.x}}`, `{{sample.output_text}}`, `{{sample.output_json.x}}`.

A template is a dotted path into one of two namespaces: `item` (the dataset row) and `sample`
(the model's output, sample_of). A segment is a key of an object or an index into an array.
Written here rather than with a template engine (Jinja) because OpenAI's syntax is only this:
an engine would accept filters, loops and attribute access that OpenAI refuses.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import AfterValidator

from rlguard.judges.graders.base import GraderError

TEMPLATE = re.compile(r"\{\{\s*(.*?)\s*\}\}")
NAMESPACES = ("item", "sample")


def sample_of(model_sample: str) -> dict[str, Any]:
    """The `sample` namespace for one model output: its text, and its JSON when the text is
    valid JSON (else null), as OpenAI's graders see it."""
    try:
        output_json = json.loads(model_sample)
    except ValueError:
        output_json = None
    message = {"role": "assistant", "content": model_sample}
    return {
        "output_text": model_sample,
        "output_json": output_json,
        "output_tools": [],
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


def check(text: str) -> str:
    """The text, if each of its templates names a namespace of OpenAI's; ValueError otherwise."""
    for path in TEMPLATE.findall(text):
        if path.split(".", 1)[0] not in NAMESPACES:
            raise ValueError(f"template '{{{{{path}}}}}' must start with 'item.' or 'sample.'")
    return text


Template = Annotated[str, AfterValidator(check)]  # a grader field that may hold templates


def render(text: str, sample: dict[str, Any], item: Any, param: str) -> str:
    """The text with each template replaced by its value (a string as is, anything else as
    JSON); a GraderError naming the template and the field when the value is not there."""
    scopes = {"item": item, "sample": sample}

    def value(match: re.Match[str]) -> str:
        path = match.group(1)
        found = _lookup(scopes, path.split("."), match.group(0), param)
        return found if isinstance(found, str) else json.dumps(found)

    return TEMPLATE.sub(value, text)


def _lookup(scopes: dict[str, Any], parts: list[str], template: str, param: str) -> Any:
    here: Any = scopes
    for depth, part in enumerate(parts):
        if isinstance(here, dict) and part in here:
            here = here[part]
        elif (
            isinstance(here, list)
            and part.lstrip("-").isdigit()
            and -len(here) <= int(part) < len(here)
        ):
            here = here[int(part)]
        else:
            field = ".".join(parts[: depth + 1])
            raise GraderError(
                f"{param}: template {template} names {field}, which the {parts[0]} does not have",
                param,
            )
    return here
