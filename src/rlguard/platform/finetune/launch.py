"""From a checked fine-tuning request to the rlguard job that runs it.

The job is a command job whose working directory (workdir.py, stored once by content hash)
holds the tenant's training and validation files as uploaded, the grader and the stage config.
Inside its sandbox it renders the files with the base model's chat template
(rlguard.train.chat_data) and runs `rlguard train`; so the tenant's data is parsed by the job,
never by the server, and every attempt starts from the same bytes. Its kind is the stage's
(`rlhf` for reinforcement), so the platform's stop rule, EvalStop by default, watches the
validation reward it reports.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlguard.platform import workdir
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import File
from rlguard.platform.finetune.methods import JOB_KIND, REINFORCEMENT

TRAIN, VALID = "train.jsonl", "valid.jsonl"


@dataclass(frozen=True)
class Plan:
    """What the job is made of: its method, base model, files and stage config."""

    method: str
    model_dir: str
    training: File
    validation: File | None
    config: dict[str, Any]
    grader: dict[str, Any] | None
    scorers: dict[str, str]  # the base models its score_model graders name: their paths


def command(plan: Plan) -> str:
    """Render each file in the job, then train (`set -e`: a bad file fails the job with the
    renderer's one-line error as its last log line)."""
    python = shlex.quote(sys.executable)
    render = f"{python} -m rlguard.train.chat_data {plan.method} {shlex.quote(plan.model_dir)}"
    lines = ["set -e", f"{render} {TRAIN} data/train.jsonl"]
    if plan.method == REINFORCEMENT:
        source = VALID if plan.validation is not None else TRAIN
        lines.append(f"{render} {source} data/valid.jsonl")
    lines.append(f"{python} -m rlguard.cli train ft.yaml --no-progress")
    return "\n".join(lines)


def working_dir(plan: Plan, store: ArtifactStore, tenant_id: str, max_bytes: int) -> str:
    """The job's working directory, packed and stored (once per content); its id."""
    with tempfile.TemporaryDirectory(prefix="rlguard-ftjob-") as tmp:
        root = Path(tmp)
        _copy(store, plan.training.store_key, root / TRAIN)
        if plan.validation is not None:
            _copy(store, plan.validation.store_key, root / VALID)
        if plan.grader is not None:
            scored = {"grader": plan.grader, "models": plan.scorers}  # reward.load_grader's file
            grader = scored if plan.scorers else plan.grader
            (root / "grader.json").write_text(json.dumps(grader), encoding="utf-8")
        (root / "ft.yaml").write_text(yaml.safe_dump(plan.config, sort_keys=False))
        packed = workdir.pack(root, max_bytes=max_bytes)
    sha256 = hashlib.sha256(packed).hexdigest()  # as a client names what it packed
    key = store.working_dir_key(tenant_id, sha256)
    if not store.exists(key):
        store.put(key, packed)
    return f"sha256:{sha256}"


def _copy(store: ArtifactStore, key: str, target: Path) -> None:
    with store.open_object(key) as source, target.open("wb") as out:
        while chunk := source.read(1 << 20):
            out.write(chunk)


def job_body(plan: Plan, working_dir_id: str, extension: dict[str, Any]) -> dict[str, Any]:
    """The rlguard job's body (schemas.JobCreate); `extension`: the request's `rlguard` object
    (gpus, cpus, memory_mb, budget_gpu_hours, stop_policy, setup)."""
    return {
        "command": command(plan),
        "kind": JOB_KIND[plan.method],
        "working_dir": working_dir_id,
        **extension,
    }
