"""The paper's offline stages before CGPO: SFT, a Bradley-Terry reward model, and DPO warm-up.

Each stage reads JSONL, trains for some epochs and saves an HF model (`save_pretrained`,
safetensors) plus its tokenizer to `output_dir/final`, which the next stage's config names.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import torch
from pydantic import Field
from rich.progress import Progress
from transformers import AutoModelForSequenceClassification, PreTrainedTokenizerBase

from rlguard.errors import InputError
from rlguard.io import write_json
from rlguard.jsonl import field, read_jsonl
from rlguard.train.checkpoint import replace_dir
from rlguard.train.config import FrozenConfig, ModelSpec, model_paths
from rlguard.train.logprobs import token_logprobs
from rlguard.train.metrics_log import MetricsLog
from rlguard.train.models import freeze, load_causal_lm, load_tokenizer
from rlguard.train.optimizers import bradley_terry_loss, dpo_loss, preference_accuracy
from rlguard.train.rollout import encode_completions


class OfflineConfig(FrozenConfig):
    stage: str
    output_dir: str
    model: ModelSpec
    data: str = Field(description="JSONL: {prompt, completion} (sft) or {prompt, chosen, rejected}")
    epochs: int = Field(1, ge=1)
    batch_size: int = Field(8, ge=1)
    learning_rate: float = Field(1e-4, gt=0)
    seed: int = 0
    tensorboard: bool = False

    def local_paths(self) -> list[tuple[str, str]]:
        """(field, path) of every local file or directory the stage reads."""
        return [*model_paths(self.model, "model"), ("data", self.data)]


class SFTConfig(OfflineConfig):
    stage: Literal["sft"] = "sft"


class RewardModelConfig(OfflineConfig):
    stage: Literal["reward"] = "reward"


class DPOConfig(OfflineConfig):
    stage: Literal["dpo"] = "dpo"
    reference: ModelSpec | None = Field(None, description="default: a frozen copy of the model")
    beta: float = Field(0.1, gt=0)

    def local_paths(self) -> list[tuple[str, str]]:
        return [*super().local_paths(), *model_paths(self.reference, "reference")]


def read_rows(path: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    source = Path(path)
    rows = [
        {c: field(source, number, row, c, str) for c in columns}
        for number, row in read_jsonl(source)
    ]
    if not rows:
        raise InputError(f"{path}: no rows")
    return rows


def batches(rows: list, size: int, epochs: int, seed: int) -> Iterator[list]:
    rng = random.Random(seed)
    for _ in range(epochs):
        order = rows[:]
        rng.shuffle(order)
        for start in range(0, len(order), size):
            yield order[start : start + size]


def fit(
    config: OfflineConfig,
    params: list[torch.nn.Parameter],
    rows: list,
    loss_fn: Callable[[list], tuple[torch.Tensor, dict[str, float]]],
    progress: bool = True,
) -> int:
    """Train on `rows`; the number of optimizer steps taken."""
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    log = MetricsLog(output, config.tensorboard)
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate)
    total = config.epochs * -(-len(rows) // config.batch_size)
    with Progress(disable=not progress, transient=True) as bar:
        job = bar.add_task(config.stage, total=total)
        for step, batch in enumerate(
            batches(rows, config.batch_size, config.epochs, config.seed), 1
        ):
            optimizer.zero_grad(set_to_none=True)
            loss, stats = loss_fn(batch)
            loss.backward()
            optimizer.step()
            log.log(step, {"loss": float(loss.detach()), **stats})
            bar.advance(job)
    log.close()
    return total


def save_final(
    model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, output_dir: str, steps: int
) -> Path:
    """The model and tokenizer in `final/`, with HF Trainer's `trainer_state.json` saying after
    how many steps (the platform names the checkpoint by it)."""
    final = Path(output_dir) / "final"
    tmp = Path(output_dir) / ".tmp-final"
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    write_json(tmp / "trainer_state.json", {"global_step": steps})
    replace_dir(tmp, final)
    return final


def run_sft(config: SFTConfig, progress: bool = True) -> Path:
    """Next-token cross-entropy on the completions (prompt tokens are context, not targets)."""
    rows = read_rows(config.data, ("prompt", "completion"))
    tokenizer = load_tokenizer(config.model, "model")
    torch.manual_seed(config.seed)
    model = load_causal_lm(config.model, tokenizer, "model").train()

    def loss_fn(batch: list[dict[str, str]]) -> tuple[torch.Tensor, dict[str, float]]:
        encoded = encode_completions(
            tokenizer, [r["prompt"] for r in batch], [r["completion"] for r in batch]
        )
        logp = token_logprobs(model, encoded)
        return -logp.sum() / encoded.completion_mask.sum(), {}

    steps = fit(config, list(model.parameters()), rows, loss_fn, progress)
    return save_final(model, tokenizer, config.output_dir, steps)


def run_reward_model(config: RewardModelConfig, progress: bool = True) -> Path:
    """Bradley-Terry: r(chosen) should exceed r(rejected); the head reads the last real token."""
    rows = read_rows(config.data, ("prompt", "chosen", "rejected"))
    tokenizer = load_tokenizer(config.model, "model")
    tokenizer.padding_side = "right"
    torch.manual_seed(config.seed)
    if config.model.path is not None:
        model = AutoModelForSequenceClassification.from_pretrained(config.model.path, num_labels=1)
    else:
        base = load_causal_lm(config.model, tokenizer, "model")
        base.config.num_labels = 1
        model = AutoModelForSequenceClassification.from_config(base.config)
    model.config.pad_token_id = tokenizer.pad_token_id
    model.train()

    def rewards(batch: list[dict[str, str]], key: str) -> torch.Tensor:
        texts = [r["prompt"] + r[key] for r in batch]
        encoded = tokenizer(texts, return_tensors="pt", padding=True)
        return model(**encoded).logits[:, 0]

    def loss_fn(batch: list[dict[str, str]]) -> tuple[torch.Tensor, dict[str, float]]:
        chosen, rejected = rewards(batch, "chosen"), rewards(batch, "rejected")
        return bradley_terry_loss(chosen, rejected), {
            "accuracy": preference_accuracy(chosen, rejected)
        }

    steps = fit(config, list(model.parameters()), rows, loss_fn, progress)
    return save_final(model, tokenizer, config.output_dir, steps)


def run_dpo(config: DPOConfig, progress: bool = True) -> Path:
    """Offline DPO on preference pairs: the paper's warm-up before online CGPO."""
    rows = read_rows(config.data, ("prompt", "chosen", "rejected"))
    tokenizer = load_tokenizer(config.model, "model")
    torch.manual_seed(config.seed)
    model = load_causal_lm(config.model, tokenizer, "model").train()
    reference = freeze(
        load_causal_lm(config.reference, tokenizer, "reference")
        if config.reference
        else copy.deepcopy(model)
    )

    def seq_logps(net: torch.nn.Module, batch: list[dict[str, str]], key: str) -> torch.Tensor:
        encoded = encode_completions(
            tokenizer, [r["prompt"] for r in batch], [r[key] for r in batch]
        )
        return token_logprobs(net, encoded).sum(dim=1)

    def loss_fn(batch: list[dict[str, str]]) -> tuple[torch.Tensor, dict[str, float]]:
        with torch.no_grad():
            ref_chosen, ref_rejected = (
                seq_logps(reference, batch, k) for k in ("chosen", "rejected")
            )
        chosen, rejected = seq_logps(model, batch, "chosen"), seq_logps(model, batch, "rejected")
        losses = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, config.beta)
        margin = (chosen - ref_chosen) - (rejected - ref_rejected)
        return losses.mean(), {"accuracy": float((margin > 0).float().mean())}

    steps = fit(config, list(model.parameters()), rows, loss_fn, progress)
    return save_final(model, tokenizer, config.output_dir, steps)
