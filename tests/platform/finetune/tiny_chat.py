"""A tiny random Llama with a chat template, built from its config in a second: the model the
chat completion tests register (never downloaded)."""

from __future__ import annotations

from pathlib import Path

from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama

TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
USER = {"role": "user", "content": "What is 2 + 2?"}


def chat_model(path: Path, template: str | None = TEMPLATE, seed: int = 0) -> Path:
    """A tiny random Llama (context 128) and its tokenizer, with `template` as its chat
    template, saved at `path`."""
    texts = ["What is 2 + 2? The final answer is 4.", "the sea is calm. the sky is wide."]
    tokenizer = train_tokenizer(texts * 4, vocab_size=300)
    tokenizer.chat_template = template
    tiny_llama(tokenizer, hidden_size=32, seed=seed).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path
