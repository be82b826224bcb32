"""The lines of a fine-tuning file, as OpenAI's fine-tuning guides define them.

Chat examples (`{"messages": [...]}`, optionally `tools` and `parallel_tool_calls`) serve
supervised and reinforcement jobs; a reinforcement example keeps any other top-level field for
its grader (`{{item.reference_answer}}`). Preference examples (`{"input": {"messages": [...]},
"preferred_output": [...], "non_preferred_output": [...]}`) serve DPO. A file is checked line by
line when uploaded (each line one of the two shapes) and again for its method when a job names
it; the first bad line is the error, naming the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Role = Literal["system", "developer", "user", "assistant", "tool"]
CHAT, PREFERENCE = "chat", "preference"


class BadExample(ValueError):
    """A line that is not a fine-tuning example: `line` (1-based) and what is wrong, its field
    first."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")  # name, tool_calls, tool_call_id, ...

    role: Role
    content: str | list[dict[str, Any]] | None = None
    weight: Literal[0, 1] | None = None  # supervised: an assistant turn left out of the loss


class Chat(BaseModel):
    model_config = ConfigDict(extra="allow")  # a reinforcement grader's reference fields

    messages: list[Message] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    parallel_tool_calls: bool | None = None


class PreferenceInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    parallel_tool_calls: bool | None = None


class Preference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: PreferenceInput
    preferred_output: list[Message] = Field(min_length=1)
    non_preferred_output: list[Message] = Field(min_length=1)


def _field_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "line"
    got = "" if err["type"] == "missing" else f" (got {json.dumps(err.get('input'))[:80]})"
    return f"{where}: {err['msg']}{got}"


def parse_line(number: int, text: str) -> tuple[str, dict[str, Any]]:
    """One line's shape (CHAT or PREFERENCE) and its object; BadExample otherwise."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadExample(number, f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(record, dict):
        raise BadExample(number, f"not a JSON object (got {type(record).__name__})")
    shape, model = (PREFERENCE, Preference) if "input" in record else (CHAT, Chat)
    try:
        model.model_validate(record)
    except ValidationError as e:
        raise BadExample(number, _field_error(e)) from None
    return shape, record


def read_lines(lines: Iterable[bytes]) -> dict[str, int]:
    """Check a file's lines (blank ones skipped); how many of each shape it holds."""
    counts = {CHAT: 0, PREFERENCE: 0}
    for number, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise BadExample(number, "not UTF-8") from None
        if text:
            shape, _ = parse_line(number, text)
            counts[shape] += 1
    if not any(counts.values()):
        raise BadExample(0, "the file holds no example")
    return counts
