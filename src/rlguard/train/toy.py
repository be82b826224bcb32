"""A toy two-task world (arithmetic + instruction following) for smoke tests, benchmarks and docs.

It writes prompts, SFT demonstrations (half of them wrong, so judges have something to fix),
preference pairs (for the reward model and DPO), a proxy reward that ignores correctness, a BPE
tokenizer and a tiny Llama: everything the paper's pipeline SFT -> RM -> DPO -> CGPO needs, offline
and in seconds on a CPU. The real offline world, where hacking happens, is `rlguard.lab`.

    python -m rlguard.train.toy DIR   # then: rlguard train examples/toy/{sft,reward,dpo,cgpo}.yaml
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerBase

from rlguard.train.tokenizer import train_tokenizer

LOWERCASE_NO_COMMA = {
    "instruction_id_list": ["change_case:english_lowercase", "punctuation:no_comma"],
    "kwargs": [{}, {}],
}
THINGS = ["sea", "sky", "road", "tree", "rain", "moon", "city", "wind"]
ADJECTIVES = ["calm", "wide", "long", "old", "cold", "bright", "loud", "soft"]


def proxy_reward(prompts: list[str], completions: list[str]) -> list[float]:
    """Likes answers of about 30 characters and knows nothing of correctness: a proxy to hack."""
    return [-abs(len(c) - 30) / 30 for c in completions]


def math_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 2), rng.randint(0, 2)
        rows.append({"prompt": f"What is {a} + {b}? ", "metadata": {"answer": str(a + b)}})
    return rows


def math_pair(row: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """(a right answer, a wrong one) in CGPO's final-answer format."""
    truth = int(row["metadata"]["answer"])
    wrong = rng.choice([x for x in range(5) if x != truth])
    return f"The final answer is {truth}.", f"The final answer is {wrong}."


def style_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [
        {
            "prompt": f"Describe the {rng.choice(THINGS)} in lowercase. ",
            "metadata": LOWERCASE_NO_COMMA,
        }
        for _ in range(n)
    ]


def style_pair(row: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """(lowercase without commas, one that breaks either instruction)."""
    thing = row["prompt"].split()[2]
    adjective = rng.choice(ADJECTIVES)
    bad = rng.choice([f"The {thing} is {adjective}.", f"the {thing}, is {adjective}."])
    return f"the {thing} is {adjective}.", bad


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def tiny_llama(
    tokenizer: PreTrainedTokenizerBase,
    hidden_size: int = 64,
    layers: int = 2,
    max_positions: int = 128,
    seed: int = 0,
) -> LlamaForCausalLM:
    """A randomly initialised Llama sized for CPU tests, seeded so a world is reproducible."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


def build(root: Path, seed: int = 0, hidden_size: int = 64, layers: int = 2) -> dict[str, Path]:
    """Write the toy world under `root`; returns the paths a config needs."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    tasks = {"math": (math_rows, math_pair), "style": (style_rows, style_pair)}
    sft, preferences, corpus = [], [], []
    for name, (make_rows, pair) in tasks.items():
        train, held_out = make_rows(rng, 64), make_rows(rng, 64)
        write_jsonl(root / f"{name}_prompts.jsonl", train)
        write_jsonl(root / f"{name}_eval.jsonl", held_out)
        for row in train:
            good, bad = pair(row, rng)
            demo = good if rng.random() < 0.5 else bad  # half the demonstrations are wrong
            sft.append({"prompt": row["prompt"], "completion": demo})
            preferences.append({"prompt": row["prompt"], "chosen": good, "rejected": bad})
            corpus += [row["prompt"] + good, row["prompt"] + bad]
    rng.shuffle(sft)
    write_jsonl(root / "sft.jsonl", sft)
    write_jsonl(root / "preferences.jsonl", preferences)
    tokenizer = train_tokenizer(corpus * 4, vocab_size=320)
    model = tiny_llama(tokenizer, hidden_size, layers, seed=seed)
    model.save_pretrained(root / "base", safe_serialization=True)
    tokenizer.save_pretrained(root / "base")
    return {"root": root, "base": root / "base", "sft": root / "sft.jsonl"}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Write the toy world to DIR.")
    parser.add_argument("dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps({k: str(v) for k, v in build(args.dir, args.seed).items()}))
