"""A Qwen2-0.5B-shaped causal LM with random weights and a tokenizer widened to its vocabulary.

GPU benchmarks need a model of a real size without downloading one. The architecture numbers are
Qwen/Qwen2-0.5B's config.json (494M parameters, tied embeddings). The toy's BPE tokenizer has a few
hundred tokens; a randomly initialised model samples any of the 151,936 ids, so the tokenizer is
widened with filler tokens that decode to text (they have no merges, so encoding never produces
them) and the LM head has its real size.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import Tokenizer
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

QWEN2_0_5B = {
    "vocab_size": 151_936,
    "hidden_size": 896,
    "intermediate_size": 4_864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32_768,
    "rope_theta": 1_000_000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
SPECIALS = ("pad_token", "eos_token", "bos_token", "unk_token")


def widen(tokenizer: PreTrainedTokenizerFast, size: int) -> PreTrainedTokenizerFast:
    """`tokenizer` with filler tokens appended to its BPE vocabulary up to `size` ids."""
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    fillers = (f"f{i}" for i in range(2 * size))
    while len(vocab) < size:
        vocab.setdefault(next(fillers), len(vocab))
    widened = Tokenizer.from_str(json.dumps(spec))
    specials = {k: getattr(tokenizer, k) for k in SPECIALS}
    return PreTrainedTokenizerFast(tokenizer_object=widened, padding_side="left", **specials)


def save_qwen_shaped(tokenizer: PreTrainedTokenizerFast, out: Path, seed: int = 0) -> int:
    """Write a random Qwen2-0.5B-shaped model and its widened tokenizer to `out`; parameters."""
    wide = widen(tokenizer, QWEN2_0_5B["vocab_size"])
    torch.manual_seed(seed)
    config = Qwen2Config(
        **QWEN2_0_5B,
        pad_token_id=wide.pad_token_id,
        eos_token_id=wide.eos_token_id,
        bos_token_id=wide.bos_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    wide.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())
