"""The world's datasets: prompts per task, a pretraining corpus, SFT demonstrations and gold-
labelled preference pairs in which length (the cheap feature) correlates with quality.

The mechanism that makes the proxy gameable: a pair is a right and a flawed response to one prompt,
and with probability `length_bias` the right one carries more elaboration sentences. The gold
scorer labels the pair; the reward model, too small to check every answer, also learns "longer is
better". Past the lengths it saw, longer stops being better: word limits break, the final answer
or the closing code fence falls off the end of the token budget, the chat rubric's 30 words pass.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from rlguard.lab.gold import GoldScorer
from rlguard.lab.tasks import TASKS, Row

MAX_ELABORATION = 3


@dataclass(frozen=True)
class DataConfig:
    seed: int = 0
    train_prompts: int = 256  # per task, for RL
    eval_prompts: int = 48  # per task, held out: the eval score and the curves
    pretrain_texts: int = 6000
    sft_demos: int = 2000
    preference_pairs: int = 3000
    sft_correct: float = 0.5  # share of right demonstrations: SFT leaves room to improve
    length_bias: float = 0.8  # P(the right response of a pair is the longer one)


def prompts(rng: random.Random, n: int) -> list[Row]:
    return [task.prompt(rng) for task in TASKS.values() for _ in range(n)]


def response(row: Row, rng: random.Random, correct: bool, elaboration: int) -> str:
    return TASKS[row.task].respond(row, rng, correct, elaboration)


def preference_pairs(
    rows: list[Row], rng: random.Random, length_bias: float
) -> list[dict[str, Any]]:
    """A right and a flawed response per row; the right one is longer with probability
    length_bias. Labelled by gold; pairs gold cannot tell apart are dropped."""
    candidates = []
    for row in rows:
        short, long = sorted(rng.sample(range(MAX_ELABORATION + 1), 2))
        good_len, bad_len = (long, short) if rng.random() < length_bias else (short, long)
        candidates.append(
            (row, response(row, rng, True, good_len), response(row, rng, False, bad_len))
        )
    scorer = GoldScorer(rows)
    gold_good = scorer([r.prompt for r, _, _ in candidates], [g for _, g, _ in candidates])
    gold_bad = scorer([r.prompt for r, _, _ in candidates], [b for _, _, b in candidates])
    return [
        {
            "prompt": row.prompt,
            "chosen": good if gg > gb else bad,
            "rejected": bad if gg > gb else good,
            "task": row.task,
        }
        for (row, good, bad), gg, gb in zip(candidates, gold_good, gold_bad, strict=True)
        if gg != gb
    ]


def build_datasets(cfg: DataConfig) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(cfg.seed)
    data: dict[str, list[dict[str, Any]]] = {
        "train": [asdict(r) for r in prompts(rng, cfg.train_prompts)],
        "eval": [asdict(r) for r in prompts(rng, cfg.eval_prompts)],
    }
    pool = prompts(rng, max(cfg.pretrain_texts, cfg.sft_demos, cfg.preference_pairs) // 4 + 1)
    data["pretrain"] = [
        {
            "prompt": "<s>",
            "completion": row.prompt
            + response(  # BOS: pretraining is plain LM
                row, rng, rng.random() < 0.5, rng.randint(0, MAX_ELABORATION)
            ),
        }
        for row in rng.choices(pool, k=cfg.pretrain_texts)
    ]
    data["sft"] = [
        {
            "prompt": row.prompt,
            "completion": response(
                row, rng, rng.random() < cfg.sft_correct, rng.choice([0, 1, 1, 2])
            ),
        }
        for row in rng.choices(pool, k=cfg.sft_demos)
    ]
    data["preferences"] = preference_pairs(
        rng.choices(pool, k=cfg.preference_pairs), rng, cfg.length_bias
    )
    return data
