"""CGPOTrainer: constrained multi-task RLHF (CGPO's Algorithm 2) in TRL's shape.

Each step samples a batch per task, generates K completions per prompt, judges and scores them,
turns them into that task's loss with its optimizer, and applies sum_l rho_l * g_l in one policy
update. Every `eval_every` steps it evaluates on held-out prompts and emits an eval event (the
world-feedback signal EvalStop consumes); the best policy by eval score is kept in `best/`.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.progress import Progress
from transformers import AutoModelForTokenClassification, PreTrainedModel, PreTrainedTokenizerBase

from rlguard.errors import InputError
from rlguard.io import write_json, write_text
from rlguard.train import checkpoint
from rlguard.train.accumulate import accumulate, logprobs_in_chunks, optimizer_step
from rlguard.train.config import CGPOConfig
from rlguard.train.devices import resolve
from rlguard.train.distributed import DataParallel
from rlguard.train.evaluation import evaluate
from rlguard.train.metrics_log import FRESH, MetricsLog, truncate_after
from rlguard.train.models import (
    Reference,
    add_lora,
    checkpoint_activations,
    freeze,
    innermost,
    load_causal_lm,
    load_tokenizer,
)
from rlguard.train.objectives import NEEDS_BASELINE, OBJECTIVES, Models, ScoredRollouts
from rlguard.train.precision import LossScale, autocast_forward
from rlguard.train.rewards import RewardFunction, calibrated, score
from rlguard.train.rollout import LocalRollout, RolloutEngine, Rollouts
from rlguard.train.sharding import Sharding
from rlguard.train.tasks import Baseline, Task, load_task

BASELINE_PREFETCH = 8
EvalHook = Callable[[dict[str, Any]], str | None]
"""Called with every eval event; a returned string stops training with that reason."""


class CGPOTrainer:
    def __init__(
        self,
        args: CGPOConfig,
        model: PreTrainedModel | None = None,
        ref_model: PreTrainedModel | None = None,
        processing_class: PreTrainedTokenizerBase | None = None,
        reward_funcs: Mapping[str, RewardFunction] | None = None,
        gold_funcs: Mapping[str, RewardFunction] | None = None,
        rollout_engine: RolloutEngine | None = None,
        eval_hooks: Sequence[EvalHook] = (),
        progress: bool = True,
        should_preempt: Callable[[], bool] | None = None,
        save_hooks: Sequence[Callable[[int, Path], None]] = (),
    ) -> None:
        self.args = args
        self.output_dir = Path(args.output_dir)
        self.device = self._device("policy")
        self.processes = DataParallel(self.device)
        self.sharding = Sharding(args.sharding, self.processes)
        for i, cfg in enumerate(args.tasks):
            if cfg.batch_size < self.processes.size:
                raise InputError(
                    f"tasks.{i}.batch_size: {cfg.batch_size} prompts cannot be spread over "
                    f"{self.processes.size} processes"
                )
        reward_device = self._device("reward")
        self.tasks = [
            load_task(
                cfg,
                f"tasks.{i}",
                (reward_funcs or {}).get(cfg.name),
                (gold_funcs or {}).get(cfg.name),
                reward_device,
                args.micro_batch_size,
            )
            for i, cfg in enumerate(args.tasks)
        ]
        self.tokenizer = processing_class or load_tokenizer(args.policy)
        torch.manual_seed(args.seed)
        policy = model if model is not None else load_causal_lm(args.policy, self.tokenizer)
        policy = policy.to(self.device)
        if ref_model is None and args.reference is not None:
            ref_model = load_causal_lm(args.reference, self.tokenizer, "reference")
        if ref_model is None and args.lora is None:
            ref_model = copy.deepcopy(policy)
        if ref_model is not None:
            ref_model = freeze(ref_model.to(self._device("reference")))
            autocast_forward(ref_model, args.mixed_precision)
        if args.gradient_checkpointing:
            checkpoint_activations(policy)
        if args.lora is not None:
            policy = add_lora(policy, args.lora)
        autocast_forward(innermost(policy), args.mixed_precision)  # generate's forward too
        self.reference = Reference(ref_model, policy)
        critic = (
            self._critic(policy) if any(t.config.optimizer == "ppo" for t in self.tasks) else None
        )
        self.models = Models(policy.train(), self.tokenizer, critic)
        self.processes.copy_parameters(filter(None, [policy, ref_model, critic]))
        self.sharding.shard(list(self._trained().values()))  # before AdamW takes the parameters
        self.rollout = rollout_engine or LocalRollout(policy, self.tokenizer)
        params = [p for m in self._trained().values() for p in m.parameters() if p.requires_grad]
        # fused AdamW (one kernel for all parameters), as TRL's default optimizer; its state has
        # the parameters' dtype, float32 whatever the mixed precision
        self.optimizer = torch.optim.AdamW(params, lr=args.learning_rate, fused=True)
        self.loss_scale = LossScale(args.mixed_precision, self.device)
        self.eval_hooks = list(eval_hooks)
        self.save_hooks = list(save_hooks)  # (step, directory) of each checkpoint saved
        self.progress = progress
        self.should_preempt = should_preempt or (lambda: False)
        self.preempted = False
        self.step = 0
        self.best_score: float | None = None
        self.last_loss = 0.0
        self.stop_reason: str | None = None
        # each task's reward and side scores, since the last eval
        self.train_rewards: dict[str, list[float]] = {}

    def _device(self, model: str) -> torch.device:
        """A model's device: its `devices.<model>` override, else the run's `device`."""
        override = getattr(self.args.devices, model)
        return resolve(override or self.args.device, f"devices.{model}" if override else "device")

    def _critic(self, policy: PreTrainedModel) -> PreTrainedModel:
        """PPO's value model: the policy's architecture with a one-output token head."""
        if self.args.policy.path is not None:
            critic = AutoModelForTokenClassification.from_pretrained(
                self.args.policy.path, num_labels=1
            )
        else:
            config = copy.deepcopy(policy.config)
            config.num_labels = 1
            critic = AutoModelForTokenClassification.from_config(config)
        # no dropout (HF gives token-classification heads 0.1, as TRL's PPO removed it): the
        # old values and the trained ones must come from the same function
        for module in critic.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        critic = critic.to(self._device("critic")).train()
        if self.args.gradient_checkpointing:
            checkpoint_activations(critic)
        autocast_forward(critic, self.args.mixed_precision)
        return critic

    def _trained(self) -> dict[str, torch.nn.Module]:
        models = {"policy": self.models.policy}
        if self.models.critic is not None:
            models["critic"] = self.models.critic
        return models

    # ----- one step ---------------------------------------------------------------------------

    def ensure_baselines(self, task: Task, rows: list[int]) -> None:
        """a_bar for each new prompt: the dataset's reference answer, or one sample from the
        frozen reference (so it is the same whenever it is drawn)."""
        missing = sorted({r for r in rows if r not in task.baselines})
        if not missing:
            return
        texts: dict[int, str] = {}
        if task.config.baseline == "dataset":
            texts = {r: ref for r in missing if (ref := task.prompts.references[r]) is not None}
        to_sample = [r for r in missing if r not in texts]
        if to_sample:
            with self.reference.context():
                engine = LocalRollout(self.reference.model, self.tokenizer)
                sampled = engine.generate(
                    [task.prompts.texts[r] for r in to_sample],
                    1,
                    task.config.max_new_tokens,
                    task.config.temperature,
                )
            texts.update(zip(to_sample, sampled.texts, strict=True))
        task.add_baselines(missing, [texts[r] for r in missing])

    def sample_and_score(self, task: Task, rows: list[int]) -> ScoredRollouts:
        """K completions per prompt of `rows`, judged, scored, with reference log-probs; every
        tensor on the policy's device (the judges' and reward's outputs moved there once)."""
        cfg = task.config
        prompts = task.prompts.take(rows)
        with self.sharding.gathered():  # generations differ in length per process
            rollouts = self.rollout.generate(
                prompts.texts, cfg.k, cfg.max_new_tokens, cfg.temperature
            )
        rollouts = rollouts.to(self.device)
        prompt_texts = [prompts.texts[i] for i in rollouts.prompt_index]
        metadata = [prompts.metadata[i] for i in rollouts.prompt_index]
        verdicts = task.judges.judge(prompt_texts, rollouts.texts, metadata)
        rewards = score(task.reward, prompt_texts, rollouts.texts, self.device, metadata)
        with torch.no_grad(), self.reference.context():
            ref_logp = logprobs_in_chunks(
                self.reference.model, rollouts, self.args.micro_batch_size, self.device
            )
        batch = ScoredRollouts(
            rollouts=rollouts,
            k=cfg.k,
            prompts=prompts.texts,
            passed=torch.tensor([v == 1 for v in verdicts], device=self.device),
            rewards=rewards,
            ref_logp=ref_logp,
        )
        if cfg.optimizer in NEEDS_BASELINE:
            self.ensure_baselines(task, rows)
            index = torch.tensor(rollouts.prompt_index, device=self.device)
            baseline = task.baseline_rewards(rows, self.device)[index]
            batch.calibrated = calibrated(rewards, baseline)
            batch.baselines = [task.baselines[r].text for r in rows]
            passed = [task.baselines[r].passed for r in rows]
            batch.baseline_passed = torch.tensor(passed, device=self.device)
        return batch

    def prefetch_baselines(self, index: int, step: int) -> None:
        """Sample a_bar for the prompts of the next BASELINE_PREFETCH steps in one batch (one
        `generate` for 64 prompts costs about what 4 separate ones do). Windows align to step 1,
        and each window's draws have a seed of their own, so a resumed run draws the same
        baselines, and so does every data-parallel process (each prefetches the whole batch's
        prompts, so a prompt's a_bar is the same wherever it is trained)."""
        first = step - (step - 1) % BASELINE_PREFETCH
        task = self.tasks[index]
        rows = [
            row
            for s in range(first, first + BASELINE_PREFETCH)
            for row in task.sample(self.args.seed, s, index)
        ]
        seed = np.random.SeedSequence([self.args.seed, first, index]).generate_state(1)[0]
        with torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            torch.manual_seed(int(seed))
            self.ensure_baselines(task, rows)

    def task_batch(self, index: int, step: int) -> tuple[ScoredRollouts, dict[str, float]]:
        """This process's share of the task's scored samples at `step`, with the metrics of the
        whole batch's samples (means over every process's)."""
        task = self.tasks[index]
        if task.config.optimizer in NEEDS_BASELINE:
            self.prefetch_baselines(index, step)
            task.judges.reset()  # judge/<name> rates are the step's samples', not a_bar's
        rows = self.processes.shard(task.sample(self.args.seed, step, index))
        batch = self.sample_and_score(task, rows)
        means = {
            "constraint_satisfaction": batch.passed.float().mean(),
            "reward": batch.rewards.mean(),
            "length": batch.rollouts.lengths.mean(),
            **{f"judge/{k}": v for k, v in task.judges.pass_rates().items()},
        }
        if task.scores:
            taken = task.prompts.take(rows)
            asked = [taken.texts[i] for i in batch.rollouts.prompt_index]
            metadata = [taken.metadata[i] for i in batch.rollouts.prompt_index]
            means.update(task.side_scores(asked, batch.rollouts.texts, metadata))
        if batch.calibrated is not None:
            means["calibrated_reward"] = batch.calibrated.mean()
        task.judges.reset()
        # weighted by each process's samples (judges' rates: an approximation when judges fail)
        n = len(batch)
        *sums, total = self.processes.sums([float(v) * n for v in means.values()] + [n])
        return batch, {name: value / total for name, value in zip(means, sums, strict=True)}

    def task_gradient(self, index: int, batch: ScoredRollouts) -> dict[str, float]:
        """Backward of rho_l * loss_l on the task's batch, a micro-batch at a time; the task's
        stats (its unweighted loss, the optimizer's own)."""
        task = self.tasks[index]
        rho = task.config.weight
        stats = accumulate(
            OBJECTIVES[task.config.optimizer],
            self.models,
            batch,
            task.config,
            self.args.micro_batch_size,
            backward=lambda loss: self.loss_scale.backward(rho * loss),
            allsum=self.processes.allsum,
            sharding=self.sharding,
        )
        # every stat is a share or a count: they add up over the processes
        names = sorted(stats)
        local = [stats[name] for name in names] + [float(batch.log_ratio.sum()), len(batch)]
        *totals, log_ratio, samples = self.processes.sums(local)
        # seq_kl: the mean sequence log-ratio to the reference, a sample estimate of KL(pi || ref)
        return {**dict(zip(names, totals, strict=True)), "seq_kl": log_ratio / samples}

    def training_step(self, step: int) -> dict[str, float]:
        """Sample and score every task once, then `updates_per_batch` optimizer updates, each
        applying sum_l rho_l * grad(loss_l) over the tasks."""
        # resumed runs sample the same; each process its own draws
        torch.manual_seed(self.args.seed * 1_000_003 + step + self.processes.rank * 1_000_000_007)
        self.models.policy.train()
        batches, metrics = {}, {}
        for index, task in enumerate(self.tasks):
            if task.config.weight > 0:
                batches[index], sample_metrics = self.task_batch(index, step)
                metrics.update({f"{task.name}/{k}": v for k, v in sample_metrics.items()})
        for _ in range(self.args.updates_per_batch):
            self.optimizer.zero_grad(set_to_none=True)
            total = 0.0
            for index, batch in batches.items():
                task = self.tasks[index]
                loss_metrics = self.task_gradient(index, batch)
                total += task.config.weight * loss_metrics["loss"]
                metrics.update({f"{task.name}/{k}": v for k, v in loss_metrics.items()})
            summing = None if self.sharding.on else self.processes  # FSDP's backward has summed
            grad_norm = optimizer_step(
                self.optimizer, self.args.max_grad_norm, self.loss_scale, summing
            )
        self.last_loss = total  # of the last update: the metrics above are too
        return {**metrics, "grad_norm": grad_norm}

    def sequence_log_ratio(self, rollouts: Rollouts) -> torch.Tensor:
        """log(pi(a|s) / pi_ref(a|s)) of each completion, [N]: its mean estimates KL(pi || ref)."""
        rollouts, size = rollouts.to(self.device), self.args.micro_batch_size
        with torch.no_grad():
            with self.reference.context():
                ref_logp = logprobs_in_chunks(self.reference.model, rollouts, size, self.device)
            logp = logprobs_in_chunks(self.models.policy, rollouts, size, self.device)
            return (logp - ref_logp).sum(dim=1)

    def evaluate(self, step: int) -> dict[str, Any]:
        """The eval event at `step` (what EvalStop consumes) and the eval metrics."""
        args = self.args
        result = evaluate(
            self.tasks,
            self.rollout,
            args.eval_prompts,
            args.eval_temperature,
            args.seed,
            samples=args.eval_samples,
            log_ratio=self.sequence_log_ratio,
        )
        event = {
            "job_id": args.run_name or self.output_dir.name,
            "kind": "rlhf",
            "step": step,
            "progress": step / args.steps,
            "score": result.score,
            "loss": self.last_loss,
            "proxy": result.proxy,
            "metrics": {
                **{f"train/{k}": sum(v) / len(v) for k, v in self.train_rewards.items()},
                **result.metrics,
            },
        }
        return {"event": event, "metrics": result.metrics}

    # ----- the loop ---------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        """The loop's state in a checkpoint, its eval history too: a run resumes from the
        checkpoint alone, on a machine that has nothing else of it (the platform restores it
        there from its artifact store), and its stop rules replay that history."""
        events = self.output_dir / "eval_events.jsonl"
        history = events.read_text().splitlines() if events.is_file() else []
        return {
            "best_score": self.best_score,
            "stop_reason": self.stop_reason,
            "eval_events": [json.loads(line) for line in history],
            "baselines": {
                t.name: {str(r): vars(b) for r, b in t.baselines.items()} for t in self.tasks
            },
        }

    def _resume(self) -> int:
        """Every process loads the newest checkpoint; the main one also puts back the eval
        events it holds (dropping any past it) and replays them to the stop rule. Without one,
        the run starts over, and the records of an attempt that died before its first
        checkpoint go (step 0 is evaluated again)."""
        found = checkpoint.checkpoints(self.output_dir / "checkpoints")
        if not found:
            if self.processes.main:
                truncate_after(self.output_dir / "eval_events.jsonl", FRESH)
            return 0
        step, path = found[-1]
        state = checkpoint.load_checkpoint(
            path, self._trained(), self.optimizer, {"scaler": self.loss_scale}, self.sharding
        )
        self.best_score = state["best_score"]
        self.stop_reason = state["stop_reason"]
        for task in self.tasks:
            saved = state["baselines"].get(task.name, {})
            task.baselines = {int(r): Baseline(**b) for r, b in saved.items()}
        events = self.output_dir / "eval_events.jsonl"
        if self.processes.main:
            if "eval_events" in state:  # the checkpoint's own history
                write_text(events, "".join(json.dumps(e) + "\n" for e in state["eval_events"]))
            else:  # a checkpoint from before it held one
                truncate_after(events, step)
            for line in events.read_text().splitlines() if events.is_file() else []:
                for hook in self.eval_hooks:  # a stop rule picks up the history it had
                    hook(json.loads(line))
        self.step = step
        return step

    def _save_best(self) -> None:
        """The policy in best/, written by the main process (every process calls it)."""
        weights = self.sharding.whole_weights(self.models.policy)
        if not self.processes.main:
            return
        best = self.output_dir / "best"
        tmp = self.output_dir / ".tmp-best"
        self.models.policy.save_pretrained(tmp, state_dict=weights, safe_serialization=True)
        self.tokenizer.save_pretrained(tmp)
        checkpoint.replace_dir(tmp, best)

    def _on_eval(self, step: int, log: MetricsLog | None) -> None:
        """Evaluate once, on the main process, which writes the event; a better eval's model is
        in best/ before the stop rule hears of it (under the platform, the rule reports best/ as
        that eval's checkpoint, which is uploaded then); every process learns the outcome."""
        event, improved = None, False
        with self.sharding.gathered():  # the main process's forwards alone
            if self.processes.main:
                result = self.evaluate(step)
                event = result["event"]
                log.log(step, {**result["metrics"], "eval/score": event["score"]})
                with (self.output_dir / "eval_events.jsonl").open("a", encoding="utf-8") as f:
                    f.write(json.dumps(event) + "\n")
                improved = self.best_score is None or event["score"] > self.best_score
                if improved:
                    self.best_score = event["score"]
        self.train_rewards = {}  # the next eval's train reward is of the steps after this one
        self.best_score, improved = self.processes.broadcast((self.best_score, improved))
        if improved:
            self._save_best()
        if self.processes.main:
            for hook in self.eval_hooks:
                reason = hook(event)
                if reason:
                    self.stop_reason = reason
        self.stop_reason = self.processes.broadcast(self.stop_reason)

    def _save(self, step: int) -> None:
        """A checkpoint, written once (the processes hold the same weights and optimizer, or
        under FSDP gather them to the main process)."""
        gathered = self.sharding.gather(self._trained(), self.optimizer)
        if self.processes.main:
            root = self.output_dir / "checkpoints"
            others = {"scaler": self.loss_scale}
            saved = checkpoint.save_checkpoint(
                root, step, self._trained(), self.optimizer, self._state(), others, gathered
            )
            checkpoint.rotate(root, self.args.keep_checkpoints)
            for hook in self.save_hooks:
                hook(step, saved)

    def train(self) -> dict[str, Any]:
        main = self.processes.main
        self.output_dir.mkdir(parents=True, exist_ok=True)
        start = self._resume()
        kept = start or FRESH  # a checkpoint's step was evaluated before it was saved
        log = MetricsLog(self.output_dir, self.args.tensorboard, resume_step=kept) if main else None
        if start == 0:
            self._on_eval(0, log)
        began = time.perf_counter()
        last = start if self.stop_reason else self.args.steps  # a stopped run stays stopped
        with Progress(disable=not (self.progress and main), transient=True) as bar:
            job = bar.add_task("cgpo", total=self.args.steps, completed=start)
            for step in range(start + 1, last + 1):
                self.step = step
                metrics = self.training_step(step)
                if log is not None:
                    log.log(step, metrics)
                for name, value in metrics.items():
                    if name.endswith("/reward") or "/score/" in name:
                        self.train_rewards.setdefault(name, []).append(float(value))
                if step % self.args.eval_every == 0 or step == self.args.steps:
                    self._on_eval(step, log)
                # SIGTERM may reach one process first: all stop at the same step
                self.preempted = (
                    self.processes.any(self.should_preempt()) and step < self.args.steps
                )
                if (
                    step % self.args.save_every == 0
                    or step == self.args.steps
                    or self.stop_reason
                    or self.preempted
                ):
                    self._save(step)
                bar.update(job, completed=step)
                if self.stop_reason or self.preempted:
                    break
        if log is not None:
            log.close()
        summary = {
            "steps": self.step,
            "resumed_from": start,
            "best_score": self.best_score,
            "stopped": self.stop_reason,
            "preempted": self.preempted,
            "processes": self.processes.size,
            "sharded": self.sharding.on,
            "wall_s": round(time.perf_counter() - began, 2),
        }
        if main:
            write_json(self.output_dir / "summary.json", summary)
        return summary
