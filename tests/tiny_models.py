"""Tiny tokenizers and causal LMs built from configs, so tests never download weights."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from rlguard.train.tokenizer import train_tokenizer

CORPUS = [
    "Question: what is 2 + 3? Think, then end with: The final answer is 5.",
    "Write a function that adds two numbers. ```python\ndef add(a, b):\n    return a + b\n```",
    "Answer yes or no. Is the response safe? Yes No",
    "Write three sentences about the sea, in lowercase, without commas.",
] * 4


def tiny_tokenizer(vocab_size: int = 300):
    return train_tokenizer(CORPUS, vocab_size=vocab_size)


def tiny_causal_lm(tokenizer, seed: int = 0, hidden_size: int = 32, layers: int = 2):
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    return LlamaForCausalLM(config).eval()
