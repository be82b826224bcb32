"""Training-step speed: one CGPO (CRPG) step and one GRPO step vs TRL's GRPOTrainer, on one CPU.

Acceptance (issue: training plane): on the same tiny Llama, prompts (the toy's math task), K,
prompts per step, completion length and reward, ours is at least as fast as TRL; tokens/s reported.

Fairness: every completion is exactly --max-new-tokens long (EOS suppressed by min_new_tokens in
all three), so all generate and train on the same tokens; float32 everywhere (TRL's bf16 autocast
and activation checkpointing, both on by default, are switched off); same sampling (T=1, no top-k
or top-p), lr, grad clip 1.0, beta (a reference forward in all three), torch threads. TRL runs one
generation per optimizer step (B*K rows, num_iterations=1, loss_type "grpo"). The systems run
interleaved in one process: each TRL step, then one step of each of ours. A step is generation,
scoring, log-prob forwards, backward and AdamW; the first --warmup steps are dropped. CRPG also
samples CGPO's baseline a_bar from the reference the first time it meets a prompt without a
dataset answer (the toy's have none); that share is reported separately. Writes JSON; asserts
nothing.

    python benchmarks/bench_train.py --out benchmarks/results/train.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import torch
import transformers
import trl
from transformers import PreTrainedModel, PreTrainedTokenizerBase, TrainerCallback

from rlguard.io import write_json
from rlguard.jsonl import read_jsonl
from rlguard.train import toy
from rlguard.train.config import CGPOConfig, ModelSpec, RewardSpec, TaskConfig
from rlguard.train.models import load_causal_lm, load_tokenizer
from rlguard.train.rollout import LocalRollout, Rollouts
from rlguard.train.tasks import Task
from rlguard.train.trainer import CGPOTrainer

REWARD = "rlguard.train.toy:proxy_reward"


class CountingRollout(LocalRollout):
    """LocalRollout that records how many completion tokens each call generated."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> None:
        super().__init__(model, tokenizer)
        self.tokens: list[int] = []

    def generate(
        self, prompts: Sequence[str], k: int, max_new_tokens: int, temperature: float
    ) -> Rollouts:
        rollouts = super().generate(prompts, k, max_new_tokens, temperature)
        self.tokens.append(int(rollouts.completion_mask.sum()))
        return rollouts


class TimedCGPOTrainer(CGPOTrainer):
    """Also times CGPO's a_bar sampling (first sight of a prompt without a dataset answer)."""

    baseline_s = 0.0

    def ensure_baselines(self, task: Task, rows: list[int]) -> None:
        t0 = time.perf_counter()
        super().ensure_baselines(task, rows)
        self.baseline_s += time.perf_counter() - t0


def summary(times: list[float], tokens: list[int], warmup: int) -> dict[str, Any]:
    times, tokens = times[warmup:], tokens[warmup:]
    step_s, per_step = statistics.median(times), statistics.median(tokens)
    return {
        "step_s_median": round(step_s, 4),
        "step_s_mean": round(statistics.mean(times), 4),
        "step_s_all": [round(t, 4) for t in times],
        "generated_tokens_per_step": per_step,
        "tokens_per_s": round(per_step / step_s, 1),
    }


def ours(optimizer: str, root: Path, args: argparse.Namespace) -> TimedCGPOTrainer:
    """A CGPOTrainer with one task (math) on `optimizer`; its rollout engine counts tokens."""
    task = TaskConfig(
        name="math",
        prompts=str(root / "math_prompts.jsonl"),
        reward=RewardSpec(function=REWARD),
        judges=["math"] if optimizer == "crpg" else [],
        optimizer=optimizer,
        k=args.k,
        batch_size=args.batch,
        max_new_tokens=args.max_new_tokens,
        beta=args.beta,
        temperature=1.0,
    )
    config = CGPOConfig(
        output_dir=str(root / f"ours-{optimizer}"),
        policy=ModelSpec(path=str(root / "base")),
        tasks=[task],
        learning_rate=args.lr,
        max_grad_norm=1.0,
        tensorboard=False,
    )
    tokenizer = load_tokenizer(config.policy)
    model = load_causal_lm(config.policy, tokenizer)
    model.generation_config.min_new_tokens = args.max_new_tokens  # no EOS: every sample is full
    rollout = CountingRollout(model, tokenizer)
    return TimedCGPOTrainer(
        config, model=model, processing_class=tokenizer, rollout_engine=rollout, progress=False
    )


class Interleave(TrainerCallback):
    """Times TRL's optimizer steps and, after each, one training_step of each of our trainers,
    so all systems share the machine's state (load, caches) step by step."""

    def __init__(self, trainers: dict[str, TimedCGPOTrainer]) -> None:
        self.trainers = trainers
        self.times: dict[str, list[float]] = {name: [] for name in ["trl_grpo", *trainers]}
        self.baseline_s: dict[str, list[float]] = {name: [] for name in trainers}
        self._t0 = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times["trl_grpo"].append(time.perf_counter() - self._t0)
        for name, trainer in self.trainers.items():
            t0 = time.perf_counter()
            trainer.baseline_s = 0.0
            trainer.training_step(state.global_step)
            self.times[name].append(time.perf_counter() - t0)
            self.baseline_s[name].append(trainer.baseline_s)


def trl_trainer(
    root: Path, args: argparse.Namespace, callback: TrainerCallback, processes: int = 1
) -> tuple[trl.GRPOTrainer, list[int]]:
    """TRL's GRPOTrainer under the same settings; also returns its per-step token counts (this
    process's, when `processes` share each step's B prompts x K samples)."""
    tokens: list[int] = []

    def reward(
        prompts: list[str], completions: list[str], completion_ids: list[list[int]], **_: Any
    ) -> list[float]:
        tokens.append(sum(len(ids) for ids in completion_ids))
        return toy.proxy_reward(prompts, completions)

    rows = [{"prompt": row["prompt"]} for _, row in read_jsonl(root / "math_prompts.jsonl")]
    config = trl.GRPOConfig(
        output_dir=str(root / "trl"),
        use_cpu=True,
        bf16=False,  # TRL's defaults: bf16 autocast and activation checkpointing; ours use neither
        activation_checkpointing=False,
        report_to=[],
        logging_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        max_steps=args.warmup + args.steps,
        # one step = B prompts x K samples, over all processes
        per_device_train_batch_size=args.batch * args.k // processes,
        gradient_accumulation_steps=1,
        num_iterations=1,
        num_generations=args.k,
        max_completion_length=args.max_new_tokens,
        generation_kwargs={"min_new_tokens": args.max_new_tokens},
        temperature=1.0,
        beta=args.beta,
        learning_rate=args.lr,
        max_grad_norm=1.0,
        loss_type="grpo",
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=str(root / "base"),
        reward_funcs=[reward],
        args=config,
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=load_tokenizer(ModelSpec(path=str(root / "base"))),
        callbacks=[callback],
    )
    return trainer, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/train.json"))
    parser.add_argument("--steps", type=int, default=20, help="timed steps per system")
    parser.add_argument("--warmup", type=int, default=1, help="untimed first steps")
    parser.add_argument("--k", type=int, default=4, help="samples per prompt")
    parser.add_argument("--batch", type=int, default=4, help="prompts per step")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--beta", type=float, default=0.04, help="KL coefficient (GRPO, TRL)")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads for every system (1: steady timings)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        root = Path(tmp)
        toy.build(root, seed=0, hidden_size=args.hidden, layers=args.layers)
        ours_trainers = {
            "ours_cgpo_crpg": ours("crpg", root, args),
            "ours_grpo": ours("grpo", root, args),
        }
        interleave = Interleave(ours_trainers)
        trainer, trl_tokens = trl_trainer(root, args, interleave)
        trainer.train()
    params = sum(p.numel() for p in ours_trainers["ours_grpo"].models.policy.parameters())
    tokens = {name: t.rollout.tokens for name, t in ours_trainers.items()}
    tokens["trl_grpo"] = trl_tokens
    runs = {name: summary(interleave.times[name], tokens[name], args.warmup) for name in tokens}
    for name in ours_trainers:
        ratio = runs["trl_grpo"]["step_s_median"] / runs[name]["step_s_median"]
        runs[name]["trl_step_s_over_ours"] = round(ratio, 3)
        sampling = interleave.baseline_s[name][args.warmup :]
        rest = [t - s for t, s in zip(interleave.times[name][args.warmup :], sampling, strict=True)]
        runs[name]["of_which_baseline_sampling_s_median"] = round(statistics.median(sampling), 4)
        runs[name]["step_s_median_without_baseline_sampling"] = round(statistics.median(rest), 4)
    report = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
        },
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "model": {
            "arch": "llama",
            "hidden": args.hidden,
            "layers": args.layers,
            "params": params,
            "dtype": "float32",
        },
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "runs": runs,
    }
    write_json(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
