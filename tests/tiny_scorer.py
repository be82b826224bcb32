"""A tiny Llama taught to score in a few seconds: asked whether an answer names Paris, it
answers 1 when the prompt's answer does and 0 when it does not. A real model grader, small
enough for the suite (built from a config and trained here, never downloaded)."""

from __future__ import annotations

from pathlib import Path

import torch

from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama

TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
ASK = "Does the answer name the capital of France? Answer: "
CITIES = {"Paris": "1", "London": "0", "Rome": "0", "Berlin": "0", "It is Paris.": "1"}


def prompt_of(tokenizer, answer: str) -> str:  # type: ignore[no-untyped-def]
    messages = [{"role": "user", "content": ASK + answer}]
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def scorer_model(path: Path, steps: int = 150) -> Path:
    """Trains the scorer (full sequences, loss on the answer and its EOS) and saves it."""
    texts = [ASK + city + " " + score for city, score in CITIES.items()]
    tokenizer = train_tokenizer(texts * 8, vocab_size=300)
    tokenizer.chat_template = TEMPLATE
    torch.manual_seed(0)
    model = tiny_llama(tokenizer, hidden_size=32, seed=0)
    rows = []
    for city, score in CITIES.items():
        prompt = tokenizer(prompt_of(tokenizer, city), add_special_tokens=False)["input_ids"]
        answer = tokenizer(score, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append((prompt + answer, len(prompt)))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        for ids, start in rows:
            x = torch.tensor([ids])
            labels = x.clone()
            labels[0, :start] = -100
            loss = model(input_ids=x, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path
