"""The datasets: deterministic for a seed, and the cheap feature correlates with quality as
configured (the mechanism that makes the proxy gameable)."""

from dataclasses import replace

import pytest

from rlguard.lab.data import DataConfig, build_datasets

SMALL = DataConfig(
    train_prompts=8, eval_prompts=4, pretrain_texts=40, sft_demos=40, preference_pairs=400
)


def test_the_same_seed_gives_the_same_world():
    assert build_datasets(SMALL) == build_datasets(SMALL)
    assert build_datasets(SMALL) != build_datasets(replace(SMALL, seed=1))


@pytest.mark.parametrize("bias", [0.5, 0.8, 0.95])
def test_the_chosen_response_is_longer_about_as_often_as_configured(bias):
    pairs = build_datasets(replace(SMALL, length_bias=bias))["preferences"]
    longer = sum(len(p["chosen"]) > len(p["rejected"]) for p in pairs) / len(pairs)
    assert abs(longer - bias) < 0.1
    assert len(pairs) > 250  # ties dropped, most pairs kept


def test_every_split_covers_every_task():
    data = build_datasets(SMALL)
    for split in ("train", "eval"):
        assert {r["task"] for r in data[split]} == {"math", "code", "instructions", "chat"}
