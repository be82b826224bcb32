"""A local Hugging Face causal LM as a judge: one forward pass per batch, no generation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


class HFBackend:
    """Scores texts with a causal LM's last-position logits.

    A label that tokenizes to several tokens is compared by its first token only, so the two labels
    must start with different tokens (" Yes" / " No" are single tokens for most tokenizers).
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 8) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(cls, path: str, batch_size: int = 8, **model_kwargs: Any) -> HFBackend:
        """Loads model and tokenizer from a local path or hub id; kwargs go to the model loader."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)
        return cls(model, AutoTokenizer.from_pretrained(path), batch_size)

    def positive_probability(
        self, texts: Sequence[str], positive: str, negative: str
    ) -> list[float | None]:
        pos, neg = self._first_token(positive), self._first_token(negative)
        if pos == neg:
            raise ValueError(f"{positive!r} and {negative!r} start with the same token {pos}")
        probs: list[float | None] = []
        for start in range(0, len(texts), self.batch_size):
            logits = self._last_logits(texts[start : start + self.batch_size])
            # p_pos / (p_pos + p_neg) = sigmoid(logit_pos - logit_neg): the softmax sum cancels.
            probs.extend(torch.sigmoid(logits[:, pos] - logits[:, neg]).tolist())
        return probs

    def _first_token(self, label: str) -> int:
        ids = self.tokenizer.encode(label, add_special_tokens=False)
        if not ids:
            raise ValueError(f"label {label!r} tokenizes to nothing")
        return ids[0]

    @torch.no_grad()
    def _last_logits(self, texts: Sequence[str]) -> torch.Tensor:
        """Float32 logits after each text's last token, left-padding the batch by hand.

        Position ids count real tokens only, so a padded text scores as it would alone.
        """
        encoded = self.tokenizer(list(texts))["input_ids"]
        width = max(len(ids) for ids in encoded)
        pad = self.tokenizer.pad_token_id
        pad = 0 if pad is None else pad  # masked out, so any id works
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in encoded])
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in encoded])
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        device = next(self.model.parameters()).device
        out = self.model(
            input_ids=input_ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
        )
        return out.logits[:, -1].float()
