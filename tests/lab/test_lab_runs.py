"""One lab run on a tiny world: deterministic for a seed, resumable, watched by the stop rules."""

import json

import pytest

from conftest import TINY_BUDGET, TINY_WORLD
from rlguard.lab.run import run
from rlguard.lab.world import build_world


def test_a_built_world_is_reused_and_a_different_one_refused(tiny_world):
    from dataclasses import replace

    assert build_world(tiny_world.root, TINY_WORLD) == tiny_world
    with pytest.raises(ValueError, match="another configuration"):
        build_world(tiny_world.root, replace(TINY_WORLD, hidden_size=48))


def test_a_run_records_gold_proxy_kl_and_the_rules_watch(tiny_world, tmp_path):
    record = run(tiny_world, "crpg", 0, TINY_BUDGET, tmp_path / "crpg")
    curve = record["curve"]
    assert curve["step"] == [0, 2, 4]
    assert curve["kl"][0] == 0.0 and all(k >= 0 for k in curve["kl"])
    assert all(0.0 <= g <= 1.0 for g in curve["gold"])
    assert set(record["stops"]) == {"evalstop", "evalstop-k2", "gao-trend"}


def test_the_same_seed_gives_the_same_run(tiny_world, tmp_path):
    a = run(tiny_world, "ppo", 3, TINY_BUDGET, tmp_path / "a")
    b = run(tiny_world, "ppo", 3, TINY_BUDGET, tmp_path / "b")
    assert a["curve"] == b["curve"]


def test_an_interrupted_run_resumes_from_its_checkpoint(tiny_world, tmp_path):
    out = tmp_path / "grpo"
    first = run(tiny_world, "grpo", 1, TINY_BUDGET, out)
    (out / "record.json").unlink()  # as if killed after its last checkpoint, before the record
    again = run(tiny_world, "grpo", 1, TINY_BUDGET, out)
    assert again["curve"] == first["curve"]
    summary = json.loads((out / "train" / "summary.json").read_text())
    assert summary["resumed_from"] == TINY_BUDGET.steps  # nothing was trained twice
