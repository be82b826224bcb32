"""Rows of a causal LM's KV cache that can be prefilled, copied, dropped and joined mid-decode.

Continuous batching needs sequences of different lengths in one forward. Rows are left-padded to a
common width: real tokens end at the last column, so a decode step appends one column for all rows;
the 2-D attention mask hides the padding and explicit position ids (the count of real tokens) give
every row the positions it would have alone, so a row's logits match an unbatched forward.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence

import torch
from transformers import DynamicCache, PreTrainedModel


def cache_from(layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    """A DynamicCache holding these tensors themselves (filling it through `update` would copy)."""
    cache = DynamicCache(ddp_cache_data=[(None, None)] * len(layers))
    for layer, (keys, values) in zip(cache.layers, layers, strict=True):
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
    return cache


@functools.cache
def cache_keyword(model_class: type[PreTrainedModel]) -> str:
    """The forward's keyword for the KV cache: `cache` where transformers has renamed it (5.x
    deprecates `past_key_values`, and 5.40 removes it), `past_key_values` before."""
    parameters = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def right_aligned(tensors: Sequence[torch.Tensor], width: int, dim: int) -> torch.Tensor:
    """The tensors stacked along dim 0, each at the right end of `width` columns along `dim`, zeros
    before it: one copy."""
    shape = list(tensors[0].shape)
    shape[0], shape[dim] = sum(t.shape[0] for t in tensors), width
    out = tensors[0].new_zeros(shape)
    row = 0
    for tensor in tensors:
        rows = out[row : row + tensor.shape[0]]
        rows.narrow(dim, width - tensor.shape[dim], tensor.shape[dim]).copy_(tensor)
        row += tensor.shape[0]
    return out


class KVBatch:
    """B rows: a full-attention DynamicCache [B, heads, W, dim], its mask [B, W] (1 = real token)
    and the logits [B, V] each row predicts for its next token."""

    def __init__(self, cache: DynamicCache, mask: torch.Tensor, logits: torch.Tensor) -> None:
        self.cache = cache
        self.mask = mask
        self.logits = logits

    def __len__(self) -> int:
        return self.mask.shape[0]

    @property
    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [(layer.keys, layer.values) for layer in self.cache.layers]

    @classmethod
    @torch.no_grad()
    def prefill(
        cls, model: PreTrainedModel, rows: Sequence[Sequence[int]], past: KVBatch | None = None
    ) -> KVBatch:
        """Run equal-length token `rows` through the model, after `past` (same row count) if given;
        `past` itself is left untouched."""
        device = model.device
        tokens = torch.tensor([list(row) for row in rows], dtype=torch.long, device=device)
        fresh = torch.ones_like(tokens)
        if past is None:
            cache, mask = DynamicCache(), fresh
            positions = torch.arange(tokens.shape[1], device=device).expand_as(tokens)
        else:
            cache, mask = cache_from(past.layers), torch.cat([past.mask, fresh], dim=1)
            offsets = torch.arange(tokens.shape[1], device=device)
            positions = past.mask.sum(dim=1, keepdim=True) + offsets
        logits = model(
            input_ids=tokens,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{cache_keyword(type(model)): cache},
        ).logits[:, -1]
        return cls(cache, mask, logits)

    @torch.no_grad()
    def step(self, model: PreTrainedModel, tokens: torch.Tensor) -> None:
        """Append one token per row [B] and predict the next."""
        positions = self.mask.sum(dim=1, keepdim=True)
        self.mask = torch.cat([self.mask, torch.ones_like(positions)], dim=1)
        self.logits = model(
            input_ids=tokens.to(self.mask.device)[:, None],
            attention_mask=self.mask,
            position_ids=positions,
            use_cache=True,
            **{cache_keyword(type(model)): self.cache},
        ).logits[:, -1]

    def select(self, rows: Sequence[int]) -> KVBatch:
        """These rows only, without the leading columns that are padding in all of them."""
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.mask.device)
        mask = self.mask[index]
        start = int(mask.any(dim=0).long().argmax())
        layers = [(k[index, :, start:], v[index, :, start:]) for k, v in self.layers]
        return KVBatch(cache_from(layers), mask[:, start:], self.logits[index])

    def repeat(self, copies: int) -> KVBatch:
        """This one-row batch as `copies` rows that share its tensors (the K samples of a group
        share its prompt's cache; views, copied once when they join the batch)."""
        if len(self) != 1:
            raise ValueError(f"repeat needs a one-row batch, got {len(self)} rows")
        layers = [
            (k.expand(copies, -1, -1, -1), v.expand(copies, -1, -1, -1)) for k, v in self.layers
        ]
        return KVBatch(
            cache_from(layers), self.mask.expand(copies, -1), self.logits.expand(copies, -1)
        )

    @staticmethod
    def concat(parts: Sequence[KVBatch]) -> KVBatch:
        """Stack batches, left-padding the narrower ones."""
        width = max(part.mask.shape[1] for part in parts)
        per_part = [part.layers for part in parts]
        layers = [
            (
                right_aligned([layers[i][0] for layers in per_part], width, dim=2),
                right_aligned([layers[i][1] for layers in per_part], width, dim=2),
            )
            for i in range(len(per_part[0]))
        ]
        mask = right_aligned([part.mask for part in parts], width, dim=1)
        return KVBatch(cache_from(layers), mask, torch.cat([part.logits for part in parts]))
