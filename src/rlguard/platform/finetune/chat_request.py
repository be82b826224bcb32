"""`POST /v1/chat/completions`'s body, as OpenAI's, and what this server does with each field.

Served: `model`, `messages` (roles system, developer (read as system, as chat templates know
it), user and assistant; content a string or text parts; `name` ignored), `max_tokens` /
`max_completion_tokens` (up to `MAX_TOKENS`; unset: as many as the cap and the model's context
allow), `temperature` (0: greedy), `top_p`, `n` (up to `MAX_N`), `seed`, `stop` (up to 4).

Ignored, as they change no completion here: `user`, `metadata`, `store`, `service_tier`,
`parallel_tool_calls`, `prompt_cache_key`, `prompt_cache_retention`, `safety_identifier`.

Refused with a 400 naming the field when they ask for what is not served (their neutral values,
such as `logprobs: false` or `frequency_penalty: 0`, pass): `stream`, `stream_options`, `tools`,
`tool_choice`, `functions`, `function_call`, `response_format` (other than text), `logprobs`,
`top_logprobs`, `logit_bias`, `presence_penalty`, `frequency_penalty`, `audio`, `modalities`
(other than text), `prediction`, `web_search_options`, `reasoning_effort`, `verbosity`. Any
other field is a 422 naming it, as OpenAI refuses an unrecognized argument; so are a tool
message and a content part that is not text.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlguard.judges.llm.chat_model import Sampling
from rlguard.platform.errors import ApiError

MAX_TOKENS = 1024
MAX_N = 8
MAX_STOP = 4
NEUTRAL: dict[str, tuple[Any, ...]] = {  # a refused field's values that ask for nothing
    "logprobs": (False,),
    "presence_penalty": (0,),
    "frequency_penalty": (0,),
    "logit_bias": ({},),
    "tools": ([],),
    "response_format": ({"type": "text"},),
    "modalities": (["text"],),
}
REFUSED = (
    "stream_options",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "logprobs",
    "top_logprobs",
    "logit_bias",
    "presence_penalty",
    "frequency_penalty",
    "audio",
    "modalities",
    "prediction",
    "web_search_options",
    "reasoning_effort",
    "verbosity",
)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "developer", "user", "assistant"]
    content: Any
    name: str | None = None

    @field_validator("content")
    @classmethod
    def _text(cls, content: Any) -> str:
        """A string, or text parts joined (`{"type": "text", "text": ...}`)."""
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            raise ValueError("expected a string or a list of text parts")
        texts = []
        for i, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text" or not isinstance(part.get("text"), str):
                raise ValueError(f"part {i}: only text parts are served (got type {kind!r})")
            texts.append(part["text"])
        return "".join(texts)

    def turn(self) -> dict[str, str]:
        return {
            "role": "system" if self.role == "developer" else self.role,
            "content": self.content,
        }


class ChatCompletionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=300)
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS)
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    n: int | None = Field(None, ge=1, le=MAX_N)
    seed: int | None = Field(None, ge=-(2**63), le=2**64 - 1)
    stop: Any = None
    stream: bool | None = None
    # ignored
    user: Any = None
    metadata: Any = None
    store: Any = None
    service_tier: Any = None
    parallel_tool_calls: Any = None
    prompt_cache_key: Any = None
    prompt_cache_retention: Any = None
    safety_identifier: Any = None
    # refused unless neutral
    stream_options: Any = None
    tools: Any = None
    tool_choice: Any = None
    functions: Any = None
    function_call: Any = None
    response_format: Any = None
    logprobs: Any = None
    top_logprobs: Any = None
    logit_bias: Any = None
    presence_penalty: Any = None
    frequency_penalty: Any = None
    audio: Any = None
    modalities: Any = None
    prediction: Any = None
    web_search_options: Any = None
    reasoning_effort: Any = None
    verbosity: Any = None

    @field_validator("stop")
    @classmethod
    def _stops(cls, stop: Any) -> list[str]:
        stops = [stop] if isinstance(stop, str) else stop or []
        if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
            raise ValueError("expected a string or a list of strings, none empty")
        if len(stops) > MAX_STOP:
            raise ValueError(f"up to {MAX_STOP} stop sequences")
        return stops

    def check(self) -> None:
        """ApiError (400) naming the first field that asks for what is not served."""
        if self.stream:
            message = "stream: streamed completions are not served; send stream: false"
            raise ApiError(400, message, "unsupported_value", "stream")
        for name in REFUSED:
            value = getattr(self, name)
            if value is not None and value not in NEUTRAL.get(name, ()):
                message = f"{name}: not supported by this server's chat completions"
                raise ApiError(400, message, "unsupported_parameter", name)
        both = (self.max_tokens, self.max_completion_tokens)
        if None not in both and both[0] != both[1]:
            message = "max_tokens: give it or max_completion_tokens, not two different values"
            raise ApiError(400, message, "invalid_value", "max_tokens")

    def sampling(self) -> Sampling:
        return Sampling(
            max_tokens=self.max_completion_tokens or self.max_tokens or MAX_TOKENS,
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            n=self.n or 1,
            seed=self.seed,
            stop=tuple(self.stop or ()),
        )

    def turns(self) -> list[dict[str, str]]:
        return [m.turn() for m in self.messages]
