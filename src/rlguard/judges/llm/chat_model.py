"""Chat completions from a Hugging Face model directory: the messages rendered with the
tokenizer's chat template, `generate` sampled as OpenAI's parameters ask, each choice cut at its
first EOS or stop sequence (which is left out of the text, as OpenAI does).

The API runs it in a Ray task or a worker thread (platform/finetune/inference_pool.py), never on
the server's event loop; a score_model grader inside a job runs it in the job's own process.
A fine-tuned model is the output of a tenant's job, so nothing in a model directory is trusted
to run: weights are read from safetensors only (a pickle is code), no remote code, and the chat
template renders in transformers' sandboxed Jinja. The model last used stays loaded in the
process (a Ray worker is reused by the next task).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sampling:
    max_tokens: int  # the most new tokens a choice may have (the model's context may cut it)
    temperature: float = 1.0  # 0: greedy
    top_p: float = 1.0
    n: int = 1
    seed: int | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    text: str
    finish_reason: str  # stop (EOS or a stop sequence) | length
    tokens: int  # generated, the EOS or stop sequence included


@dataclass(frozen=True)
class Completion:
    choices: list[Choice]
    prompt_tokens: int


@dataclass(frozen=True)
class Refusal:
    """What the API answers instead (a value, not an exception: it crosses Ray unchanged)."""

    status: int
    message: str
    code: str
    param: str | None = field(default=None)


@functools.lru_cache(maxsize=1)
def load(path: str) -> tuple[Any, Any]:
    """(model, tokenizer) of a model directory, in eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    model = AutoModelForCausalLM.from_pretrained(
        path, use_safetensors=True, trust_remote_code=False
    )
    return model.eval(), tokenizer


def complete(path: str, messages: list[dict[str, str]], sampling: Sampling) -> Completion | Refusal:
    from jinja2 import TemplateError

    try:
        model, tokenizer = load(path)
    except Exception as e:  # any directory may be handed here: whatever fails, it is said so
        message = (
            f"the model could not be loaded ({type(e).__name__}); this server reads weights "
            "from safetensors only"
        )
        return Refusal(500, message, "model_error")
    if not tokenizer.chat_template:
        message = "model: this model's tokenizer has no chat template to render messages with"
        return Refusal(400, message, "model_without_chat_template", "model")
    try:
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    except TemplateError as e:
        return Refusal(
            400,
            f"messages: the model's chat template refused them: {e}",
            "invalid_value",
            "messages",
        )
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    context = getattr(model.config, "max_position_embeddings", None)
    room = (
        sampling.max_tokens if context is None else min(sampling.max_tokens, context - ids.shape[1])
    )
    if room < 1:
        message = (
            f"messages: the prompt is {ids.shape[1]} tokens, which leaves no room in this "
            f"model's context of {context} tokens"
        )
        return Refusal(400, message, "context_length_exceeded", "messages")
    rows = _generate(model, tokenizer, ids, sampling, room)
    return Completion([_choice(tokenizer, row, sampling.stop) for row in rows], ids.shape[1])


def _generate(
    model: Any, tokenizer: Any, ids: Any, sampling: Sampling, room: int
) -> list[list[int]]:
    """The new tokens of each of the `n` choices. A fresh generation config: the model's own
    (`generation_config.json`: top_k, repetition penalties) is not OpenAI's sampling."""
    import torch
    from transformers import GenerationConfig, StoppingCriteriaList

    greedy = sampling.temperature == 0
    settings: dict[str, Any] = (
        {"do_sample": False}
        if greedy
        else {
            "do_sample": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": 0,
            "num_return_sequences": sampling.n,
        }
    )
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    config = GenerationConfig(
        max_new_tokens=room, eos_token_id=tokenizer.eos_token_id, pad_token_id=pad, **settings
    )
    stops = [_StopAt(tokenizer, sampling.stop, ids.shape[1])] if sampling.stop else []
    if sampling.seed is not None:
        torch.manual_seed(sampling.seed)
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            generation_config=config,
            stopping_criteria=StoppingCriteriaList(stops),
        )
    rows = out[:, ids.shape[1] :].tolist()
    return rows * sampling.n if greedy else rows  # greedy: n equal choices, computed once


class _StopAt:
    """Ends a sequence once its generated text holds a stop sequence. Not transformers'
    `stop_strings`, which also match across the prompt's end: OpenAI's stop sequences are
    sought in the completion only."""

    def __init__(self, tokenizer: Any, stop: tuple[str, ...], start: int) -> None:
        self.tokenizer, self.stop, self.start = tokenizer, stop, start

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.start :], skip_special_tokens=True)
        hit = [any(s in text for s in self.stop) for text in texts]
        return torch.tensor(hit, dtype=torch.bool, device=input_ids.device)


def _choice(tokenizer: Any, row: list[int], stop: tuple[str, ...]) -> Choice:
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    if eos is not None and eos in row:
        end = row.index(eos)
        text = tokenizer.decode(row[:end], skip_special_tokens=True)
        return Choice(text, "stop", end + 1)
    while row and pad is not None and row[-1] == pad:  # padded after a stop sequence ended it
        row = row[:-1]
    text = tokenizer.decode(row, skip_special_tokens=True)
    cuts = [text.find(s) for s in stop if s in text]
    if cuts:
        return Choice(text[: min(cuts)], "stop", len(row))
    return Choice(text, "length", len(row))
