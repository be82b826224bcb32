"""A tiny world, built once per session: seconds to build, enough to exercise every stage."""

import pytest

from rlguard.lab.data import DataConfig
from rlguard.lab.run import Budget
from rlguard.lab.world import WorldConfig, build_world

TINY_WORLD = WorldConfig(
    data=DataConfig(
        train_prompts=8, eval_prompts=4, pretrain_texts=64, sft_demos=64, preference_pairs=64
    ),
    hidden_size=32,
    layers=2,
    vocab_size=400,
    pretrain_epochs=1,
    sft_epochs=1,
    reward_epochs=1,
    batch_size=16,
)
TINY_BUDGET = Budget(
    steps=4, eval_every=2, prompts_per_task=2, k=2, max_new_tokens=24, eval_prompts=4
)


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("lab") / "world", TINY_WORLD)
