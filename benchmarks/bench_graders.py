"""How many samples per second each of OpenAI's grader types grades here, as a reinforcement
job would call it (in process, one sample at a time; the python grader also two at a time, one
per core, since each sample is a sandboxed child process). Model outputs and items are seeded
sentences of a small vocabulary, 10 to 40 words. The score_model grader runs on a tiny random
Llama (hidden size 32, built here) answering 4 tokens greedily: the cost of the grader's own
work around a generation, not of a real scoring model, whose generation dominates. Each type
is timed in every round (3 by default) and its median kept; the host's load average is
recorded, since other work on the machine slows every number. Asserts nothing.

    python benchmarks/bench_graders.py --out benchmarks/results/graders.json
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rlguard.io import write_json
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.score_model import LocalModels
from rlguard.judges.graders.templates import sample_of
from rlguard.judges.graders.text_similarity import METRICS, meteor_synonyms
from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama

RESULTS = Path(__file__).parent / "results"
WORDS = [
    *("the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "rug"),
    *("quickly", "slowly", "red", "blue", "big", "small", "and"),
]
TEXT = {"input": "{{sample.output_text}}", "reference": "{{item.reference}}"}
PYTHON = (
    "def grade(sample, item):\n"
    "    said, wanted = sample['output_text'].split(), item['reference'].split()\n"
    "    return len(set(said) & set(wanted)) / max(len(set(wanted)), 1)\n"
)
GRADERS: dict[str, tuple[dict[str, Any], int]] = {  # name: (grader, samples to time)
    "string_check": ({"type": "string_check", "operation": "ilike", **TEXT}, 20_000),
    **{
        f"text_similarity/{metric}": (
            {"type": "text_similarity", "evaluation_metric": metric, **TEXT},
            2_000,
        )
        for metric in METRICS
    },
    "python": ({"type": "python", "source": PYTHON}, 60),
    "score_model": (
        {
            "type": "score_model",
            "model": "tiny",
            "input": [
                {"role": "user", "content": "Score {{sample.output_text}} for {{item.reference}}"}
            ],
            "sampling_params": {"temperature": 0, "max_completions_tokens": 4},
        },
        100,
    ),
    "multi": (
        {
            "type": "multi",
            "graders": {
                "exact": {"type": "string_check", "name": "e", "operation": "eq", **TEXT},
                "close": {
                    "type": "text_similarity",
                    "name": "c",
                    "evaluation_metric": "rouge_l",
                    **TEXT,
                },
            },
            "calculate_output": "0.5 * exact + 0.5 * close ^ 2",
        },
        2_000,
    ),
}


def tiny_model(path: Path) -> Path:
    """A tiny random Llama with a chat template, saved at `path`."""
    tokenizer = train_tokenizer([" ".join(WORDS)] * 8, vocab_size=300)
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    tiny_llama(tokenizer, hidden_size=32, seed=0).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 40)))


def rate(grader: Any, pairs: list[tuple[dict[str, Any], dict[str, Any]]], workers: int) -> float:
    """Samples per second, after a few untimed ones (a library's first call loads its tables)."""
    for pair in pairs[:3]:
        grader.grade(*pair)
    start = time.perf_counter()
    if workers == 1:
        for pair in pairs:
            grader.grade(*pair)
    else:
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda pair: grader.grade(*pair), pairs))
    return len(pairs) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="times each type's samples")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "graders.json")
    args = parser.parse_args()
    rng = random.Random(0)
    rounds: dict[str, list[float]] = {}
    load_before = os.getloadavg()[0]
    tmp = tempfile.TemporaryDirectory(prefix="bench-graders-")
    models = LocalModels({"tiny": str(tiny_model(Path(tmp.name) / "tiny"))})
    for _ in range(args.rounds):
        for name, (spec, count) in GRADERS.items():
            grader = parse_grader({"name": name, **spec}, models=models)
            pairs = [
                (sample_of(sentence(rng)), {"reference": sentence(rng)})
                for _ in range(max(1, int(count * args.scale)))
            ]
            rounds.setdefault(name, []).append(round(rate(grader, pairs, 1), 1))
            if name == "python":
                rounds.setdefault("python/2 workers", []).append(round(rate(grader, pairs, 2), 1))
            print(f"{name}: {rounds[name][-1]} samples/s", flush=True)
    result = {
        "command": "python benchmarks/bench_graders.py",
        "samples_per_s": {name: statistics.median(got) for name, got in rounds.items()},
        "rounds": rounds,
        "meteor_synonyms": type(meteor_synonyms()).__name__,  # _NoSynonyms: no WordNet here
        "load_average_1m": {"before": load_before, "after": os.getloadavg()[0]},
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }
    tmp.cleanup()
    write_json(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
