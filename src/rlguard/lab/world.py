"""Build the lab's world under a directory: datasets, a BPE tokenizer, a tiny Llama pretrained
and SFT'd on them, and the proxy reward model. Each stage leaves a finished marker, so an
interrupted build resumes where it stopped, and a built world is reused."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rlguard.io import write_json, write_text
from rlguard.lab.data import DataConfig, build_datasets
from rlguard.lab.tasks import TASKS, Row
from rlguard.train.offline import RewardModelConfig, SFTConfig, run_reward_model, run_sft
from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama


@dataclass(frozen=True)
class WorldConfig:
    data: DataConfig = field(default_factory=DataConfig)
    hidden_size: int = 128
    layers: int = 4
    vocab_size: int = 640
    pretrain_epochs: int = 8
    sft_epochs: int = 6
    reward_epochs: int = 2
    batch_size: int = 32


@dataclass(frozen=True)
class World:
    """Paths of a built world."""

    root: Path

    @property
    def policy(self) -> Path:
        return self.root / "sft" / "final"

    @property
    def reward_model(self) -> Path:
        return self.root / "reward" / "final"

    def prompts(self, task: str, split: str) -> Path:
        """A task's RL prompts (split "train") or held-out prompts ("eval")."""
        return self.root / "data" / f"{task}_{split}.jsonl"

    def rows(self) -> list[Row]:
        """Every prompt of the world, train and eval, with its task and metadata."""
        return [
            Row(**json.loads(line))
            for split in ("train", "eval")
            for line in (self.root / "data" / f"{split}.jsonl").open(encoding="utf-8")
        ]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(r) + "\n" for r in rows))


def build_world(root: Path, cfg: WorldConfig = WorldConfig(), progress: bool = False) -> World:
    world = World(root)
    manifest = root / "world.json"
    wanted = asdict(cfg)
    if manifest.is_file():
        built = json.loads(manifest.read_text())
        if built["config"] == json.loads(json.dumps(wanted)):
            return world
        raise ValueError(f"{manifest}: a world with another configuration is already there")
    seed = cfg.data.seed
    data_dir = root / "data"
    if not (data_dir / "done").is_file():
        for name, rows in build_datasets(cfg.data).items():
            _jsonl(data_dir / f"{name}.jsonl", rows)
            if name in ("train", "eval"):
                for task in TASKS:
                    _jsonl(world.prompts(task, name), [r for r in rows if r["task"] == task])
        write_text(data_dir / "done", "")
    base = root / "base"
    if not (base / "config.json").is_file():
        texts = [json.loads(line)["completion"] for line in (data_dir / "pretrain.jsonl").open()]
        tokenizer = train_tokenizer(texts, vocab_size=cfg.vocab_size)
        model = tiny_llama(tokenizer, cfg.hidden_size, cfg.layers, max_positions=256, seed=seed)
        tokenizer.save_pretrained(base)
        model.save_pretrained(base, safe_serialization=True)
    stages = [
        (run_sft, SFTConfig, "pretrain", base, "pretrain.jsonl", cfg.pretrain_epochs, 3e-3),
        (run_sft, SFTConfig, "sft", root / "pretrain" / "final", "sft.jsonl", cfg.sft_epochs, 1e-3),
        (
            run_reward_model,
            RewardModelConfig,
            "reward",
            root / "sft" / "final",
            "preferences.jsonl",
            cfg.reward_epochs,
            5e-4,
        ),
    ]
    for run, config_type, name, start, data, epochs, lr in stages:
        if (root / name / "final").is_dir():
            continue
        config = config_type(
            output_dir=str(root / name),
            model={"path": str(start)},
            data=str(data_dir / data),
            epochs=epochs,
            batch_size=cfg.batch_size,
            learning_rate=lr,
            seed=seed,
        )
        run(config, progress=progress)
    write_json(manifest, {"config": wanted})
    return world
