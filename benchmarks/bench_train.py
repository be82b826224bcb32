"""Training-step speed: one CGPO (CRPG) step and one GRPO step vs TRL's GRPOTrainer, CPU or GPU.

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

On a GPU (`--device cuda --bf16 --arch qwen2-0.5b`): a Qwen2-0.5B-shaped model with random weights,
bf16 autocast in all three; each step's generation time and, on CUDA, its peak memory above the
weights and optimizer state; `--profile` adds one torch.profiler step of each system (top ops).

    python benchmarks/bench_train.py --out benchmarks/results/train.json
    python benchmarks/bench_train.py --device cuda --bf16 --arch qwen2-0.5b --batch 8 --k 8 \
        --max-new-tokens 64 --steps 3 --warmup 1 --threads 8 --profile \
        --out benchmarks/results/train_cuda_h200.json
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
from qwen_shaped import save_qwen_shaped
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
    times, tokens = times[warmup:], tokens[warmup : len(times)]  # no profiled step
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
        device=args.device,
        mixed_precision="bf16" if args.bf16 else "no",
    )
    tokenizer = load_tokenizer(config.policy)
    model = load_causal_lm(config.policy, tokenizer)
    model.generation_config.min_new_tokens = args.max_new_tokens  # no EOS: every sample is full
    rollout = CountingRollout(model, tokenizer)
    return TimedCGPOTrainer(
        config, model=model, processing_class=tokenizer, rollout_engine=rollout, progress=False
    )


def sync() -> None:
    """Wait for the GPU's queue, so wall times cover the work they started."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class GenerationClock:
    """Sums the seconds one model's `generate` takes: a step's generation phase."""

    def __init__(self, model: PreTrainedModel) -> None:
        self.seconds = 0.0
        inner = model.generate

        def timed(*args: Any, **kwargs: Any) -> Any:
            sync()
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                sync()
                self.seconds += time.perf_counter() - t0

        model.generate = timed

    def take(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


class StepMemory:
    """On CUDA: the most memory a step allocated above what was allocated when it began."""

    def begin(self) -> None:
        if torch.cuda.is_available():
            sync()
            self.base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()

    def end(self) -> float | None:
        if not torch.cuda.is_available():
            return None
        sync()
        return (torch.cuda.max_memory_allocated() - self.base) / 2**30


class Interleave(TrainerCallback):
    """Times TRL's optimizer steps and, after each, one training_step of each of our trainers,
    so all systems share the machine's state (load, caches) step by step. A step past
    `timed_steps` is profiled (torch.profiler) for each system instead of timed."""

    def __init__(self, trainers: dict[str, TimedCGPOTrainer], timed_steps: int) -> None:
        self.trainers = trainers
        self.timed_steps = timed_steps
        names = ["trl_grpo", *trainers]
        self.times: dict[str, list[float]] = {name: [] for name in names}
        self.generate_s: dict[str, list[float]] = {name: [] for name in names}
        self.step_gib: dict[str, list[float]] = {name: [] for name in names}
        self.profiles: dict[str, list[dict[str, Any]]] = {}
        self.baseline_s: dict[str, list[float]] = {name: [] for name in trainers}
        self.clocks = {name: GenerationClock(t.rollout.model) for name, t in trainers.items()}
        self.memory = StepMemory()
        self._t0 = 0.0
        self._profiler: torch.profiler.profile | None = None

    def watch_trl(self, model: PreTrainedModel) -> None:
        self.clocks["trl_grpo"] = GenerationClock(model)

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step >= self.timed_steps:
            self._profiler = profiler()
            self._profiler.start()
        self.memory.begin()
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        sync()
        self.record("trl_grpo", time.perf_counter() - self._t0)
        for name, trainer in self.trainers.items():
            profiling = self._profiler is not None
            if profiling:
                self._profiler = profiler()
                self._profiler.start()
            self.memory.begin()
            t0 = time.perf_counter()
            trainer.baseline_s = 0.0
            trainer.training_step(state.global_step)
            sync()
            self.record(name, time.perf_counter() - t0)
            if not profiling:
                self.baseline_s[name].append(trainer.baseline_s)

    def record(self, name: str, seconds: float) -> None:
        generate_s, gib = self.clocks[name].take(), self.memory.end()
        if self._profiler is not None:
            self._profiler.stop()
            self.profiles[name] = top_ops(self._profiler)
            return
        self.times[name].append(seconds)
        self.generate_s[name].append(generate_s)
        print(f"{name}: step {seconds:.3f} s, generate {generate_s:.3f} s", flush=True)
        if gib is not None:
            self.step_gib[name].append(gib)


def profiler() -> torch.profiler.profile:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=activities)


def top_ops(prof: torch.profiler.profile, rows: int = 15) -> list[dict[str, Any]]:
    """The ops that took the most device time (CPU time on a CPU run) in a profiled step."""
    device = torch.cuda.is_available()
    key = "self_device_time_total" if device else "self_cpu_time_total"
    ops = sorted(prof.key_averages(), key=lambda e: getattr(e, key), reverse=True)
    return [
        {
            "op": e.key,
            "calls": e.count,
            "self_device_ms": round(e.self_device_time_total / 1e3, 2) if device else None,
            "self_cpu_ms": round(e.self_cpu_time_total / 1e3, 2),
        }
        for e in ops[:rows]
    ]


def state_gib(modules: Sequence[torch.nn.Module | None], optimizer: torch.optim.Optimizer) -> float:
    """Memory a system holds between steps: its models' weights and the optimizer's state."""
    tensors = [p for m in modules if m is not None for p in m.parameters()]
    tensors += [t for st in optimizer.state.values() for t in st.values() if torch.is_tensor(t)]
    unique = {t.data_ptr(): t.numel() * t.element_size() for t in tensors}
    return round(sum(unique.values()) / 2**30, 3)


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
        use_cpu=args.device == "cpu",
        bf16=args.bf16,  # TRL's default is bf16 autocast; ours is fp32 unless --bf16 asks
        activation_checkpointing=False,  # TRL's default; ours recompute nothing
        report_to=[],
        logging_strategy="no",
        save_strategy="no",
        disable_tqdm=True,
        max_steps=args.warmup + args.steps + args.profile,
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
    parser.add_argument("--device", default="cpu", help="cpu or cuda, for every system")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast in every system")
    parser.add_argument(
        "--arch",
        choices=["tiny-llama", "qwen2-0.5b"],
        default="tiny-llama",
        help="qwen2-0.5b: Qwen2-0.5B's shape with random weights (--hidden/--layers unused)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="profile one more step of each system after timing"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    with tempfile.TemporaryDirectory(prefix="bench-train-") as tmp:
        root = Path(tmp)
        toy.build(root, seed=0, hidden_size=args.hidden, layers=args.layers)
        if args.arch == "qwen2-0.5b":
            save_qwen_shaped(load_tokenizer(ModelSpec(path=str(root / "base"))), root / "base")
        ours_trainers = {
            "ours_cgpo_crpg": ours("crpg", root, args),
            "ours_grpo": ours("grpo", root, args),
        }
        interleave = Interleave(ours_trainers, timed_steps=args.warmup + args.steps)
        trainer, trl_tokens = trl_trainer(root, args, interleave)
        interleave.watch_trl(trainer.model)
        trainer.train()
    policy = ours_trainers["ours_grpo"].models.policy
    params = sum(p.numel() for p in policy.parameters())
    tokens = {name: t.rollout.tokens for name, t in ours_trainers.items()}
    tokens["trl_grpo"] = trl_tokens
    runs = {name: summary(interleave.times[name], tokens[name], args.warmup) for name in tokens}
    held = {
        name: state_gib([t.models.policy, t.reference.model], t.optimizer)
        for name, t in ours_trainers.items()
    }
    held["trl_grpo"] = state_gib([trainer.model, trainer.ref_model], trainer.optimizer)
    policies = {name: t.models.policy for name, t in ours_trainers.items()}
    policies["trl_grpo"] = trainer.model
    for name, run in runs.items():
        run["weights_dtype"] = str(next(policies[name].parameters()).dtype)
        run["generate_s_median"] = round(
            statistics.median(interleave.generate_s[name][args.warmup :]), 4
        )
        if interleave.step_gib[name]:
            step_gib = max(interleave.step_gib[name][args.warmup :])
            run["memory_gib"] = {
                "weights_and_optimizer_state": held[name],
                "step_peak_above_that": round(step_gib, 3),
                "peak": round(held[name] + step_gib, 3),
            }
        if name in interleave.profiles:
            run["profiled_step_top_ops"] = interleave.profiles[name]
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
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "model": {
            "arch": type(policy).__name__,
            "hidden": policy.config.hidden_size,
            "layers": policy.config.num_hidden_layers,
            "vocab": policy.config.vocab_size,
            "params": params,
            "autocast": "bf16" if args.bf16 else None,
        },
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "runs": runs,
    }
    write_json(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
