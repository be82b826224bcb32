"""`rlguard judge FILE.jsonl`: run judges over a dataset to filter or audit it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.progress import Progress

from rlguard.errors import InputError
from rlguard.io import atomic_path
from rlguard.jsonl import field, read_jsonl


def read_samples(path: Path) -> tuple[list[str], list[str], list[dict]]:
    prompts, completions, metadata = [], [], []
    for number, row in read_jsonl(path):
        prompts.append(field(path, number, row, "prompt", str))
        completions.append(field(path, number, row, "completion", str))
        metadata.append(field(path, number, row, "metadata", dict, default={}))
    if not prompts:
        raise InputError(f"{path}: no rows")
    return prompts, completions, metadata


def judge(
    file: Annotated[Path, typer.Argument(help='JSONL rows {"prompt", "completion", "metadata"}')],
    judges: Annotated[str, typer.Option(help="comma list of judges")] = "math,code,instructions",
    out: Annotated[Path | None, typer.Option(help="verdict rows file (default stdout)")] = None,
    judge_model: Annotated[str | None, typer.Option(help="local HF model for LLM judges")] = None,
    judge_endpoint: Annotated[
        str | None, typer.Option(help="OpenAI-compatible URL for LLM judges")
    ] = None,
    judge_endpoint_model: Annotated[str | None, typer.Option(help="model the URL serves")] = None,
    batch_size: Annotated[int, typer.Option(min=1, help="rows judged per batch")] = 64,
) -> None:
    """Judge every row; one verdict row per input row, in order; pass rates on stderr."""
    from transformers.utils import logging as hf_logging

    from rlguard.judges.mixture import MixtureOfJudges
    from rlguard.judges.registry import JudgeSpec, build_judge

    hf_logging.disable_progress_bar()

    names = [n.strip() for n in judges.split(",") if n.strip()]
    try:
        specs = [
            JudgeSpec(
                name=name,
                model=judge_model,
                endpoint=judge_endpoint,
                endpoint_model=judge_endpoint_model,
            )
            if name in ("false_refusal", "factuality", "safety")
            else JudgeSpec(name=name)
            for name in names
        ]
    except ValidationError as e:
        message = e.errors()[0]["msg"].removeprefix("Value error, ")
        raise InputError(f"option --judges: {message}") from None
    prompts, completions, metadata = read_samples(file)
    mixture = MixtureOfJudges([build_judge(s) for s in specs])
    rows = []
    with Progress(transient=True, console=None, disable=len(prompts) <= batch_size) as bar:
        task = bar.add_task("judging", total=len(prompts))
        for start in range(0, len(prompts), batch_size):
            batch = slice(start, start + batch_size)
            result = mixture.evaluate(prompts[batch], completions[batch], metadata[batch])
            for i, verdict in enumerate(result.combined):
                per_judge = {
                    name: {"verdict": v[i].value, "reason": v[i].reason}
                    for name, v in result.per_judge.items()
                }
                rows.append({"verdict": verdict, "judges": per_judge})
            bar.advance(task, len(result.combined))
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if out is None:
        sys.stdout.write(text)
    else:
        with atomic_path(out) as tmp:
            tmp.write_text(text, encoding="utf-8")
    _summary(rows, mixture.pass_rates(), mixture.failure_rates())


def _summary(rows: list[dict], pass_rates: dict[str, float], failures: dict[str, float]) -> None:
    passed = sum(r["verdict"] == 1 for r in rows)
    lines = [f"all judges: {passed}/{len(rows)} passed ({passed / len(rows):.1%})"]
    lines += [
        f"{name}: pass {rate:.1%}, judge failures {failures[name]:.1%}"
        for name, rate in pass_rates.items()
    ]
    print("\n".join(lines), file=sys.stderr)
