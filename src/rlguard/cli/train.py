"""`rlguard train CONFIG.yaml`: one command for every stage of the paper's pipeline.

The YAML's `stage` picks it: `sft`, `reward` (Bradley-Terry reward model), `dpo` (offline warm-up)
or `cgpo` (the default: constrained multi-task RLHF). `--nproc N` runs cgpo data-parallel over N
processes on this machine, through `accelerate launch`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from rlguard.cli.options import names
from rlguard.cluster.events import EvalEvent
from rlguard.cluster.stopping.base import StopRule
from rlguard.errors import InputError
from rlguard.ports import unused_port


def stop_rule_hook(rule: StopRule) -> Callable[[dict[str, Any]], str | None]:
    """A cluster stop rule as a CGPO eval hook: the stop reason, or None to go on."""

    def hook(event: dict[str, Any]) -> str | None:
        decision = rule.observe(EvalEvent(**event))
        return decision.reason or "stop rule" if decision.stop else None

    return hook


EXIT_FILE = "RLGUARD_EXIT_FILE"  # where a launched main process leaves the code it exits with


def launch(nproc: int, program: list[str]) -> int:
    """`python PROGRAM` in `nproc` processes through accelerate's torchrun launcher (one per GPU,
    or gloo processes on a CPU machine), on a free port so runs side by side do not meet; the
    exit code.

    torchrun reports any failed process as 1, so a preempted run's 143 would read as a crash: the
    main process leaves its own exit code in EXIT_FILE and that is returned instead. A SIGTERM
    to the process group (how the platform preempts) is left to the processes, which checkpoint
    and exit; this one waits for them rather than dying first."""
    port = unused_port()
    command = [
        *(sys.executable, "-m", "accelerate.commands.launch"),
        *(["--multi_gpu"] if nproc > 1 else []),  # torchrun's launcher (one process: plain)
        *("--num_processes", str(nproc), "--num_machines", "1", "--main_process_port", str(port)),
        *("--mixed_precision", "no", "--dynamo_backend", "no"),  # the config's own field rules
        *program,
    ]
    with tempfile.TemporaryDirectory() as scratch:
        exit_file = Path(scratch) / "exit"
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
        try:
            code = subprocess.call(command, env={**os.environ, EXIT_FILE: str(exit_file)})
        finally:
            signal.signal(signal.SIGTERM, previous)
        return int(exit_file.read_text()) if code and exit_file.exists() else code


def leave_exit_code(code: int) -> None:
    """Under `launch`, tell it the code this (main) process exits with."""
    if EXIT_FILE in os.environ:
        Path(os.environ[EXIT_FILE]).write_text(str(code))


def train(
    config: Annotated[Path, typer.Argument(help="YAML config (see docs/train.md)")],
    stop_rule: Annotated[
        str, typer.Option(help="cgpo: stop on falling eval scores (a cluster stop rule), or none")
    ] = "none",
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    nproc: Annotated[
        int, typer.Option(min=1, help="cgpo: data-parallel processes (accelerate launch)")
    ] = 1,
) -> None:
    """Train one stage (sft, reward, dpo or cgpo) from a YAML config; resumes if interrupted."""
    from transformers.utils import logging as hf_logging

    from rlguard.cluster.registry import RULES, RuleParams
    from rlguard.train.config import load_yaml
    from rlguard.train.stages import parse_stage

    hf_logging.disable_progress_bar()  # per-shard load/save bars would bury our own progress
    raw = load_yaml(config)
    rule = RULES[names(stop_rule, list(RULES), "--stop-rule", allow_many=False)[0]](RuleParams())
    stage, cfg = parse_stage(raw, config)
    if nproc > 1 and "WORLD_SIZE" not in os.environ:  # not yet launched: launch
        if stage != "cgpo":
            raise InputError(
                f"option --nproc: only the cgpo stage runs data-parallel (got {stage})"
            )
        flags = ["--stop-rule", stop_rule, "--progress" if progress else "--no-progress"]
        raise typer.Exit(launch(nproc, ["-m", "rlguard.cli", "train", str(config), *flags]))
    if stage == "cgpo":
        from rlguard.platform.client import PlatformRule
        from rlguard.train.preemption import PREEMPTED_EXIT, SigtermFlag
        from rlguard.train.trainer import CGPOTrainer

        # Under the platform, it decides the stops (and this job reports its evals to it, and
        # its checkpoints, which the platform stores and restores on any node).
        platform = PlatformRule.from_env(best_dir=str(Path(cfg.output_dir) / "best"))
        rule = platform or rule
        hooks = [stop_rule_hook(rule)] if rule is not None else []
        trainer = CGPOTrainer(
            cfg,
            eval_hooks=hooks,
            progress=progress,
            should_preempt=SigtermFlag(),
            save_hooks=[platform.saved] if platform is not None else [],
        )
        summary = trainer.train()
        if trainer.processes.main:
            print(json.dumps(summary))
        if summary["preempted"]:
            if trainer.processes.main:
                leave_exit_code(PREEMPTED_EXIT)
            raise typer.Exit(PREEMPTED_EXIT)  # checkpointed: "resume me", not "done"
        return
    from rlguard.platform.client import JobReporter
    from rlguard.train.offline import run_dpo, run_reward_model, run_sft

    runners = {"sft": run_sft, "reward": run_reward_model, "dpo": run_dpo}
    final = runners[stage](cfg, progress)
    reporter = JobReporter.from_env()
    if reporter is not None:  # under the platform: the model goes to its store
        steps = json.loads((final / "trainer_state.json").read_text())["global_step"]
        reporter.checkpoint(steps, str(final))
    print(json.dumps({"stage": stage, "model": str(final)}))
