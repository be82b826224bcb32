"""One lab run on a tiny world: deterministic for a seed, resumable, watched by the stop rules."""

import json

import pytest

from conftest import TINY_BUDGET, TINY_WORLD
from rlguard.lab.run import run
from rlguard.lab.world import build_world

pytestmark = pytest.mark.slow  # lab runs end to end: not in `make test-fast`


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


def test_an_experiment_reads_its_finished_runs_and_runs_only_the_rest(
    tiny_world, tmp_path, monkeypatch
):
    """Resuming an experiment trains only what is missing; finished runs are read in place (a
    worker would import torch to find them) and the summary is the same."""
    import shutil

    from rlguard.lab import experiment
    from rlguard.lab.experiment import LabConfig, overoptimization

    shutil.copytree(tiny_world.root, tmp_path / "world")
    cfg = LabConfig(seeds=1, methods=("ppo", "crpg"), world=TINY_WORLD, budget=TINY_BUDGET)
    first = overoptimization(cfg, tmp_path, workers=1, quiet=True)
    (tmp_path / "runs" / "crpg-seed0" / "record.json").unlink()
    ran = []
    real = experiment._run_one
    monkeypatch.setattr(experiment, "_run_one", lambda item: ran.append(item[3]) or real(item))
    assert overoptimization(cfg, tmp_path, workers=1, quiet=True) == first
    assert ran == ["crpg"]
