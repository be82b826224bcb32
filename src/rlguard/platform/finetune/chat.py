"""OpenAI's `POST /v1/chat/completions` (the `read` scope): a tenant tries a model as on OpenAI,
a base model of the operator's or one of its own fine-tuned models (a model of another tenant
answers as one that does not exist). The body is chat_request.py's; the completion runs in
inference_pool.py's Ray task or thread; the answer is OpenAI's `chat.completion` object.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from rlguard.judges.llm.chat_model import Completion, Refusal
from rlguard.platform.api import Caller, Reader
from rlguard.platform.db import Tenant
from rlguard.platform.errors import ApiError
from rlguard.platform.finetune.chat_request import ChatCompletionCreate
from rlguard.platform.finetune.inference_pool import pool
from rlguard.platform.finetune.models import fine_tuned, model_not_found
from rlguard.platform.finetune.weights import WeightsTooLarge, WeightsUnavailable, local_weights

router = APIRouter()
CACHE_DIR = "model-cache"  # under the data directory: fine-tuned weights, by store key


def fine_tuned_key(request: Request, tenant_id: str, model_id: str) -> str | None:
    """The store key of this tenant's fine-tuned model's weights (None: it has no such model)."""
    with request.app.state.platform.store.transaction() as s:
        tenant = s.get(Tenant, tenant_id)
        found = None if tenant is None else fine_tuned(s, Caller(tenant, frozenset()), model_id)
        return None if found is None else found[1].store_key


def model_weights(request: Request, tenant_id: str, model_id: str) -> str:
    """The local Hugging Face directory of a model this tenant may use: a base model's own
    path, or a fine-tuned model's checkpoint fetched from the artifact store into the cache."""
    platform = request.app.state.platform
    base = platform.models.get(model_id)
    if base is not None:
        return base.path
    key = fine_tuned_key(request, tenant_id, model_id)
    if key is None:
        raise model_not_found(model_id)
    try:
        return str(
            local_weights(request.app.state.deposits.store, key, platform.data_dir / CACHE_DIR)
        )
    except WeightsTooLarge as e:
        raise ApiError(
            400, f"model: {model_id} cannot be served: {e}", "model_too_large", "model"
        ) from None
    except WeightsUnavailable as e:
        raise ApiError(
            503, f"model: {model_id} cannot be served now: {e}", "model_unavailable", "model"
        ) from None


def completion_object(model: str, done: Completion) -> dict[str, Any]:
    choices = [
        {
            "index": i,
            "message": {"role": "assistant", "content": c.text, "refusal": None},
            "finish_reason": c.finish_reason,
            "logprobs": None,
        }
        for i, c in enumerate(done.choices)
    ]
    generated = sum(c.tokens for c in done.choices)
    return {
        "id": f"chatcmpl-{secrets.token_hex(12)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        "usage": {
            "prompt_tokens": done.prompt_tokens,
            "completion_tokens": generated,
            "total_tokens": done.prompt_tokens + generated,
        },
    }


@router.post("/v1/chat/completions")
async def create(body: ChatCompletionCreate, request: Request, who: Reader) -> dict[str, Any]:
    body.check()
    path = await run_in_threadpool(model_weights, request, who.tenant.id, body.model)
    done = await pool(request).complete(path, body.turns(), body.sampling())
    if isinstance(done, Refusal):
        raise ApiError(done.status, done.message, done.code, done.param)
    return completion_object(body.model, done)
