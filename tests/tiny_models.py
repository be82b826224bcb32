"""Tiny tokenizers and causal LMs built from configs, so tests never download weights."""

from __future__ import annotations

from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama

CORPUS = [
    "Question: what is 2 + 3? Think, then end with: The final answer is 5.",
    "Write a function that adds two numbers. ```python\ndef add(a, b):\n    return a + b\n```",
    "Answer yes or no. Is the response safe? Yes No",
    "Write three sentences about the sea, in lowercase, without commas.",
] * 4


def tiny_tokenizer(vocab_size: int = 300):
    return train_tokenizer(CORPUS, vocab_size=vocab_size)


def tiny_causal_lm(tokenizer, seed: int = 0, hidden_size: int = 32, layers: int = 2):
    return tiny_llama(tokenizer, hidden_size, layers, max_positions=256, seed=seed).eval()
