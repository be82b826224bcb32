"""`rlguard train CONFIG.yaml`: one command for every stage of the paper's pipeline.

The YAML's `stage` picks it: `sft`, `reward` (Bradley-Terry reward model), `dpo` (offline warm-up)
or `cgpo` (the default: constrained multi-task RLHF).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from rlguard.cli.options import names
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.base import StopRule
from rlguard.errors import InputError

STAGES = ("sft", "reward", "dpo", "cgpo")


def stop_rule_hook(rule: StopRule) -> Callable[[dict[str, Any]], str | None]:
    """A cluster stop rule as a CGPO eval hook: the stop reason, or None to go on."""

    def hook(event: dict[str, Any]) -> str | None:
        decision = rule.observe(EvalEvent(**event))
        return decision.reason or "stop rule" if decision.stop else None

    return hook


def train(
    config: Annotated[Path, typer.Argument(help="YAML config (see docs/train.md)")],
    stop_rule: Annotated[
        str, typer.Option(help="cgpo: stop on falling eval scores (a cluster stop rule), or none")
    ] = "none",
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Train one stage (sft, reward, dpo or cgpo) from a YAML config; resumes if interrupted."""
    from transformers.utils import logging as hf_logging

    from rlguard.cluster.registry import RULES, RuleParams
    from rlguard.train.config import CGPOConfig, check_paths, load_yaml, parse_config
    from rlguard.train.offline import (
        DPOConfig,
        RewardModelConfig,
        SFTConfig,
        run_dpo,
        run_reward_model,
        run_sft,
    )

    hf_logging.disable_progress_bar()  # per-shard load/save bars would bury our own progress
    raw = load_yaml(config)
    stage = raw.pop("stage", "cgpo")
    if stage not in STAGES:
        raise InputError(
            f"{config}: stage: unknown stage {stage!r} (choose from {', '.join(STAGES)})"
        )
    rule = RULES[names(stop_rule, list(RULES), "--stop-rule", allow_many=False)[0]](RuleParams())
    if stage == "cgpo":
        from rlguard.train.trainer import CGPOTrainer

        cfg = parse_config(CGPOConfig, raw, config)
        check_paths(cfg.local_paths(), config)
        hooks = [stop_rule_hook(rule)] if rule is not None else []
        summary = CGPOTrainer(cfg, eval_hooks=hooks, progress=progress).train()
        print(json.dumps(summary))
        return
    runners = {
        "sft": (SFTConfig, run_sft),
        "reward": (RewardModelConfig, run_reward_model),
        "dpo": (DPOConfig, run_dpo),
    }
    model, run = runners[stage]
    offline = parse_config(model, {**raw, "stage": stage}, config)
    check_paths(offline.local_paths(), config)
    final = run(offline, progress)
    print(json.dumps({"stage": stage, "model": str(final)}))
