"""Group generation with continuous batching and deduplicated prefill, for the runtime's actors.

A group is one prompt with its K samples. Its prompt is prefilled once and the KV cache copied to
the K rows (RLHFless's deduplicated prefill); with `share_prefix`, the prefix that all prompts of a
call have in common (a system prompt) is prefilled once too. Sequences leave the batch when they
end and waiting ones take their slots. Tokens are drawn by counter-based sampling, so a sample does
not depend on its batch, its actor or on being cut and resumed elsewhere from `prefix`.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import torch
from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from rlguard.runtime.generation.kv_batch import KVBatch
from rlguard.runtime.generation.sampling import as_int64, next_tokens


@dataclass
class GroupRequest:
    """K samples of one prompt; `prefix` holds tokens already generated per sample (migration)."""

    group_id: int
    prompt_ids: list[int]
    k: int
    max_new_tokens: int
    temperature: float
    seed: int
    prefix: list[list[int]] | None = None

    def __post_init__(self) -> None:
        if not self.prompt_ids:
            raise ValueError(f"group {self.group_id}: prompt_ids is empty")
        if self.k < 1 or self.max_new_tokens < 1:
            raise ValueError(
                f"group {self.group_id}: k={self.k} and max_new_tokens={self.max_new_tokens} "
                "must be >= 1"
            )
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"group {self.group_id}: temperature={self.temperature} must be >= 0")
        if self.prefix is not None and len(self.prefix) != self.k:
            raise ValueError(
                f"group {self.group_id}: prefix has {len(self.prefix)} entries for k={self.k}"
            )


@dataclass
class SampleResult:
    """A completion (the resumed prefix included, EOS kept); unfinished = cut before its end."""

    group_id: int
    sample: int
    tokens: list[int]
    finished: bool


@dataclass
class GenerationOutput:
    samples: list[SampleResult]  # every sample of every request, in request then sample order
    prefill_tokens: int  # tokens run through prefill forwards (what dedup saves)
    decode_tokens: int  # completion tokens sampled in this call
    prefill_s: float  # admitting sequences: prefill forwards and KV cache assembly
    decode_s: float  # the rest of the call: decode steps and sampling


@dataclass
class _Sequence:
    request: GroupRequest
    sample: int
    tokens: list[int]
    new_tokens: int = 0

    def done(self, eos_token_id: int) -> bool:
        ended = bool(self.tokens) and self.tokens[-1] == eos_token_id
        return ended or len(self.tokens) >= self.request.max_new_tokens

    def coordinates(self) -> list[int]:
        """What its next token's noise is keyed by."""
        request = self.request
        return [as_int64(request.seed), as_int64(request.group_id), self.sample, len(self.tokens)]


def shared_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the prefix common to all prompts, leaving each at least one token of its own."""
    length = min(len(prompt) for prompt in prompts) - 1
    first = prompts[0]
    for i in range(length):
        if any(prompt[i] != first[i] for prompt in prompts):
            return i
    return length


def check_full_attention(config: PretrainedConfig) -> None:
    """Left-padded rows in one DynamicCache assume every layer attends to the whole context."""
    layer_types = getattr(config, "layer_types", None)
    if layer_types is not None:
        if any(kind != "full_attention" for kind in layer_types):
            raise ValueError(f"GroupGenerator needs full-attention layers, got {set(layer_types)}")
    elif getattr(config, "sliding_window", None) is not None:
        raise ValueError(
            "GroupGenerator needs full-attention layers, the model has a sliding window"
        )


@dataclass
class _Prefill:
    """Builds the KV rows of sequences joining the batch; counts and times what it computes."""

    model: PreTrainedModel
    dedup: bool
    system_length: int  # shared prefix prefilled once (0 = none)
    unjoined: Counter[int]  # samples per group still to join: its prompt cache is kept until then
    tokens: int = 0
    seconds: float = 0.0
    prompts: dict[int, KVBatch] = field(default_factory=dict)
    system: KVBatch | None = None

    def admit(self, joining: list[_Sequence]) -> tuple[list[_Sequence], KVBatch]:
        """(the joining sequences in row order, their rows)."""
        start = time.perf_counter()
        ordered, parts = [], []
        for group_id, members in groupby(joining, key=lambda seq: seq.request.group_id):
            members = list(members)
            fresh = [seq for seq in members if not seq.tokens]
            resumed = [seq for seq in members if seq.tokens]
            ordered += fresh + resumed
            parts += self.group_rows(members[0].request, len(fresh), resumed)
            self.unjoined[group_id] -= len(members)
            if self.unjoined[group_id] == 0:
                self.prompts.pop(group_id, None)
        rows = KVBatch.concat(parts) if len(parts) > 1 else parts[0]
        self.seconds += time.perf_counter() - start
        return ordered, rows

    def group_rows(
        self, request: GroupRequest, fresh: int, resumed: list[_Sequence]
    ) -> list[KVBatch]:
        prompt = request.prompt_ids
        if not self.dedup:
            rows = [self.run([prompt + seq.tokens]) for seq in resumed]
            return ([self.run([prompt] * fresh)] if fresh else []) + rows
        shared = self.prompt_rows(request)
        rows = [self.run([seq.tokens], past=shared) for seq in resumed]
        return ([shared.repeat(fresh)] if fresh else []) + rows

    def prompt_rows(self, request: GroupRequest) -> KVBatch:
        if request.group_id not in self.prompts:
            if self.system_length:
                if self.system is None:
                    self.system = self.run([request.prompt_ids[: self.system_length]])
                own = request.prompt_ids[self.system_length :]
                self.prompts[request.group_id] = self.run([own], past=self.system)
            else:
                self.prompts[request.group_id] = self.run([request.prompt_ids])
        return self.prompts[request.group_id]

    def run(self, rows: list[list[int]], past: KVBatch | None = None) -> KVBatch:
        self.tokens += sum(len(row) for row in rows)
        return KVBatch.prefill(self.model, rows, past)


# after every sampled token: (samples finished, all samples) -> cut everything now?
StepCallback = Callable[[int, int], bool]


class GroupGenerator:
    """Samples K completions per prompt with one causal LM (full attention, e.g. Llama or Qwen2).

    `eos` is the tokenizer or its EOS id. Up to `max_batch` sequences decode together.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        eos: PreTrainedTokenizerBase | int,
        dedup_prefill: bool = True,
        max_batch: int = 64,
        share_prefix: bool = True,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch={max_batch} must be >= 1")
        check_full_attention(model.config)
        self.model = model
        self.eos_token_id = eos if isinstance(eos, int) else eos.eos_token_id
        self.dedup_prefill = dedup_prefill
        self.max_batch = max_batch
        self.share_prefix = share_prefix

    @torch.no_grad()
    def generate(
        self,
        requests: Sequence[GroupRequest],
        stop_after_tokens: int | None = None,
        on_step: StepCallback | None = None,
    ) -> GenerationOutput:
        """Run the requests to the end, or cut them: a sample stops unfinished after
        `stop_after_tokens` new tokens, and all stop when `on_step` returns True."""
        if stop_after_tokens is not None and stop_after_tokens < 1:
            raise ValueError(f"stop_after_tokens={stop_after_tokens} must be >= 1")
        sequences = self.sequences(requests)
        was_training = self.model.training
        self.model.eval()
        try:
            return self.run(sequences, stop_after_tokens, on_step)
        finally:
            self.model.train(was_training)

    def run(
        self,
        sequences: list[_Sequence],
        stop_after_tokens: int | None,
        on_step: StepCallback | None,
    ) -> GenerationOutput:
        """The decode loop: admit waiting sequences into free slots, sample, drop finished ones."""
        waiting = deque(seq for seq in sequences if not seq.done(self.eos_token_id))
        prefill = self.prefill_plan(waiting)
        active: list[_Sequence] = []
        batch: KVBatch | None = None
        decode_tokens = 0
        start = time.perf_counter()
        while waiting or active:
            if waiting and len(active) < self.max_batch:
                free = min(len(waiting), self.max_batch - len(active))
                ordered, rows = prefill.admit([waiting.popleft() for _ in range(free)])
                active += ordered
                batch = rows if batch is None else KVBatch.concat([batch, rows])
            tokens = self.sample(batch, active)
            for seq, token in zip(active, tokens.tolist(), strict=True):
                seq.tokens.append(token)
                seq.new_tokens += 1
            decode_tokens += len(active)
            if on_step is not None and on_step(
                sum(seq.done(self.eos_token_id) for seq in sequences), len(sequences)
            ):
                break
            keep = [i for i, seq in enumerate(active) if self.continues(seq, stop_after_tokens)]
            if len(keep) < len(active):
                active = [active[i] for i in keep]
                batch = batch.select(keep) if keep else None
            if active:
                batch.step(self.model, tokens[keep])
        elapsed = time.perf_counter() - start
        samples = [
            SampleResult(seq.request.group_id, seq.sample, seq.tokens, seq.done(self.eos_token_id))
            for seq in sequences
        ]
        return GenerationOutput(
            samples, prefill.tokens, decode_tokens, prefill.seconds, elapsed - prefill.seconds
        )

    def sequences(self, requests: Sequence[GroupRequest]) -> list[_Sequence]:
        ids = [request.group_id for request in requests]
        if len(set(ids)) != len(ids):
            raise ValueError(f"group ids repeat within one call: {ids}")
        sequences = []
        for request in requests:
            for sample in range(request.k):
                prefix = list(request.prefix[sample]) if request.prefix else []
                if len(prefix) > request.max_new_tokens or self.eos_token_id in prefix[:-1]:
                    raise ValueError(
                        f"group {request.group_id} sample {sample}: prefix of {len(prefix)} tokens "
                        f"is longer than max_new_tokens={request.max_new_tokens} or continues "
                        "after EOS"
                    )
                sequences.append(_Sequence(request, sample, prefix))
        return sequences

    def prefill_plan(self, waiting: Sequence[_Sequence]) -> _Prefill:
        unjoined = Counter(seq.request.group_id for seq in waiting)
        prompts = list({seq.request.group_id: seq.request.prompt_ids for seq in waiting}.values())
        share = self.dedup_prefill and self.share_prefix and len(prompts) > 1
        system_length = shared_prefix_length(prompts) if share else 0
        return _Prefill(self.model, self.dedup_prefill, system_length, unjoined)

    def continues(self, seq: _Sequence, stop_after_tokens: int | None) -> bool:
        cut = stop_after_tokens is not None and seq.new_tokens >= stop_after_tokens
        return not cut and not seq.done(self.eos_token_id)

    @staticmethod
    def sample(batch: KVBatch, active: list[_Sequence]) -> torch.Tensor:
        device = batch.logits.device
        temperatures = torch.tensor([seq.request.temperature for seq in active], device=device)
        coordinates = torch.tensor([seq.coordinates() for seq in active], device=device)
        return next_tokens(batch.logits, temperatures, coordinates)
