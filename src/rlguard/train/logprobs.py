"""Per-token log-probabilities (and per-token outputs in general) of completions under a model."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from rlguard.train.rollout import Rollouts


def completion_outputs(model: PreTrainedModel, rollouts: Rollouts) -> torch.Tensor:
    """The model's per-position outputs (logits, or values for a token classifier) at the
    positions that predict each completion token, [N, C, ...].

    Position ids follow the attention mask, as in `generate`, so left padding does not shift
    positions between sampling and scoring.
    """
    device = model.device
    input_ids = torch.cat([rollouts.prompt_ids, rollouts.completion_ids], dim=1).to(device)
    attention = torch.cat([rollouts.prompt_mask.float(), rollouts.completion_mask], dim=1)
    attention = attention.to(device)
    positions = (attention.long().cumsum(dim=1) - 1).clamp(min=0)
    logits = model(
        input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=False
    ).logits  # no KV cache: nothing is generated from here
    prompt_len = rollouts.prompt_ids.shape[1]
    return logits[:, prompt_len - 1 : -1].float()


def token_logprobs(model: PreTrainedModel, rollouts: Rollouts) -> torch.Tensor:
    """log pi(a_t | s, a_<t) for every completion token, [N, C], zero where masked."""
    logits = completion_outputs(model, rollouts)
    targets = rollouts.completion_ids.to(logits.device).unsqueeze(-1)
    logp = torch.gather(logits.log_softmax(dim=-1), 2, targets).squeeze(-1)
    return logp * rollouts.completion_mask.to(logits.device)
