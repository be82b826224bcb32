"""OpenAI's `/v1/models`: the operator's base models (base_models.py), as OpenAI lists its own."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from rlguard.platform.api import Reader
from rlguard.platform.errors import ApiError
from rlguard.platform.finetune.base_models import RegisteredModel

router = APIRouter()


def _models(request: Request) -> dict[str, RegisteredModel]:
    return request.app.state.platform.models


@router.get("/v1/models")
def list_models(request: Request, who: Reader) -> dict[str, Any]:
    data = [m.view() for m in sorted(_models(request).values(), key=lambda m: m.name)]
    return {"object": "list", "data": data}


@router.get("/v1/models/{model_id}")
def retrieve(model_id: str, request: Request, who: Reader) -> dict[str, Any]:
    model = _models(request).get(model_id)
    if model is None:
        message = f"The model '{model_id}' does not exist"
        raise ApiError(404, message, "model_not_found", "model")
    return model.view()
