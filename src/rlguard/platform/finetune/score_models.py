"""The models a tenant's score_model grader may use on this server (score_model.ScoringModels).

Graders run by the API (`graders/run`) score with the operator's base models and the tenant's
own fine-tuned ones, generated on the chat completions' inference pool (so they queue behind the
same bound). A fine-tuning job's grader runs inside the job, which sees the base models'
directories only: at creation it may name a base model, its templates are rendered on the first
item, and nothing is generated (the job's own process loads the model).
"""

from __future__ import annotations

import anyio.from_thread
from fastapi import Request

from rlguard.judges.llm.chat_model import Choice, Completion, Refusal, Sampling
from rlguard.platform.finetune.base_models import RegisteredModel
from rlguard.platform.finetune.chat import fine_tuned_key, model_weights
from rlguard.platform.finetune.inference_pool import pool

NOT_AVAILABLE = "the model does not exist or is not available to you"


class TenantModels:
    """For the API's graders, in a request's worker thread."""

    def __init__(self, request: Request, tenant_id: str) -> None:
        self.request, self.tenant_id = request, tenant_id

    def refusal(self, model: str) -> str | None:
        if model in self.request.app.state.platform.models:
            return None
        return None if fine_tuned_key(self.request, self.tenant_id, model) else NOT_AVAILABLE

    def complete(
        self, model: str, messages: list[dict[str, str]], sampling: Sampling
    ) -> Completion | Refusal:
        path = model_weights(self.request, self.tenant_id, model)
        return anyio.from_thread.run(pool(self.request).complete, path, messages, sampling)


class JobModels:
    """For a fine-tuning job's grader at creation: base models only, nothing generated."""

    def __init__(self, base: dict[str, RegisteredModel]) -> None:
        self.base = base

    def refusal(self, model: str) -> str | None:
        if model in self.base:
            return None
        return (
            "a job's score_model grader scores with a registered base model (GET /v1/models); "
            "a fine-tuned model cannot score inside a job"
        )

    def complete(
        self, model: str, messages: list[dict[str, str]], sampling: Sampling
    ) -> Completion | Refusal:
        return Completion([Choice("", "stop", 0)], 0)  # the templates rendered: enough here
