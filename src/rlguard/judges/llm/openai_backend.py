"""An OpenAI-compatible completions endpoint (vLLM, TGI, ...) as a judge, over the standard library.

One request per chunk asks for a single token with its top log-probabilities; the labels' mass is
read from those. Only the standard library is used so the judge adds no client dependency.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from rlguard.judges.llm.backend import normalized

log = logging.getLogger(__name__)


class EndpointError(RuntimeError):
    """The endpoint could not be reached or answered with an error after the allowed retries."""


class OpenAIBackend:
    """POSTs to `{base_url}/completions`; base_url as for the openai client, e.g. .../v1.

    The API key is read from the environment variable `api_key_env` at each request (never stored
    or logged); with the variable unset no Authorization header is sent, as a local vLLM needs.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout_s: float = 30.0,
        max_retries: int = 2,
        batch_size: int = 32,
        top_logprobs: int = 20,
        backoff_s: float = 1.0,
    ) -> None:
        if batch_size < 1 or max_retries < 0:
            raise ValueError("batch_size must be positive and max_retries non-negative")
        self.url = base_url.rstrip("/") + "/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.batch_size = batch_size
        self.top_logprobs = top_logprobs
        self.backoff_s = backoff_s

    def positive_probability(
        self, texts: Sequence[str], positive: str, negative: str
    ) -> list[float | None]:
        probs: list[float | None] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = list(texts[start : start + self.batch_size])
            top = self._top_logprobs(chunk)
            probs.extend(label_probability(t, positive, negative) for t in top)
        return probs

    def _top_logprobs(self, prompts: list[str]) -> list[Mapping[str, float] | None]:
        """The first generated position's token -> logprob map, per prompt, in prompt order."""
        body = {
            "model": self.model,
            "prompt": prompts,
            "max_tokens": 1,
            "logprobs": self.top_logprobs,
            "temperature": 0,
            "echo": False,
        }
        choices = sorted(self._post(body).get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != len(prompts):
            raise EndpointError(f"{len(prompts)} prompts sent, {len(choices)} choices returned")
        return [_first_top(choice) for choice in choices]

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries on connection errors, 429 and 5xx; other HTTP errors fail at once."""
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = json.dumps(body).encode()
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                if exc.code != 429 and exc.code < 500:
                    detail = exc.read()[:200].decode(errors="replace")
                    raise EndpointError(f"{self.url}: HTTP {exc.code}: {detail}") from exc
                error: Exception = exc
            except (OSError, json.JSONDecodeError) as exc:  # URLError, timeouts, resets
                error = exc
            if attempt < self.max_retries:
                log.warning("judge endpoint %s failed (%s); retrying", self.url, error)
                time.sleep(self.backoff_s * 2**attempt)
        raise EndpointError(f"{self.url} failed after {self.max_retries + 1} attempts: {error}")


def _first_top(choice: Mapping[str, Any]) -> Mapping[str, float] | None:
    tops = (choice.get("logprobs") or {}).get("top_logprobs") or []
    return tops[0] if tops else None


def label_probability(
    top: Mapping[str, float] | None, positive: str, negative: str
) -> float | None:
    """Normalized p(positive) from a top-logprobs map; None when neither label is among them.

    Tokens match a label ignoring surrounding whitespace and case (" Yes", "yes", "YES" all count,
    their probabilities summed). A label absent from the top tokens counts as probability 0.
    """
    if not top:
        return None
    pos, neg = _mass(top, positive), _mass(top, negative)
    if pos == neg == -math.inf:
        return None
    return normalized(pos, neg)


def _mass(top: Mapping[str, float], label: str) -> float:
    """log sum exp of the logprobs of every token variant of `label`; -inf if there is none."""
    wanted = label.strip().lower()
    logprobs = [lp for token, lp in top.items() if token.strip().lower() == wanted]
    if not logprobs:
        return -math.inf
    peak = max(logprobs)
    return peak + math.log(sum(math.exp(lp - peak) for lp in logprobs))
