"""Read the per-step metrics verl prints: console lines and JSONL.

verl's console logger prints one line per step, `step:N - key:value - key:value ...` (values plain,
or `np.float64(...)` under numpy 2), often behind Ray's `(TaskRunner pid=...)` prefix; its file
logger writes one JSON object per step (`{"step": N, "data": {...}}`). Older verl names the timers
`timing/...` rather than `timing_s/...`. Only the keys the calibration uses are kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from rlguard.errors import InputError

# verl metric -> our field name (calib/measured.py)
KEYS = {
    "timing_s/gen": "gen_s",
    "timing_s/generate_sequences": "generate_sequences_s",
    "timing_s/reshard": "reshard_s",
    "timing_s/reward": "reward_s",
    "timing_s/old_log_prob": "old_log_prob_s",
    "timing_s/ref": "ref_s",
    "timing_s/values": "values_s",
    "timing_s/adv": "adv_s",
    "timing_s/update_critic": "update_critic_s",
    "timing_s/update_actor": "update_actor_s",
    "timing_s/testing": "testing_s",
    "timing_s/step": "step_s",
    "prompt_length/mean": "prompt_length_mean",
    "response_length/mean": "response_length_mean",
    "response_length/max": "response_length_max",
    "response_length/clip_ratio": "response_clip_ratio",
    "perf/mfu/actor": "mfu_actor",
}
_CONSOLE = re.compile(r"(?:^|\s)step:(\d+) - (.*)$")
_WRAPPED = re.compile(r"^(?:np\.\w+|tensor|float)\((.*)\)$")


def _key(name: str) -> str | None:
    return KEYS.get(name.replace("timing/", "timing_s/", 1))


def _number(raw: object, where: str, name: str) -> float:
    text = str(raw).strip()
    match = _WRAPPED.match(text)
    try:
        return float(match.group(1) if match else text)
    except ValueError:
        raise InputError(f"{where}: metric {name!r} is not a number (got {text[:40]!r})") from None


def _metrics(pairs: dict[str, object], where: str) -> dict[str, float]:
    out = {}
    for name, value in pairs.items():
        field = _key(name)
        if field is not None:
            out[field] = _number(value, where, name)
    return out


def _console_pairs(body: str) -> dict[str, str]:
    pairs = {}
    for item in body.split(" - "):
        name, sep, value = item.partition(":")
        if sep:
            pairs[name.strip()] = value
    return pairs


def read_verl_log(path: Path) -> dict[int, dict[str, float]]:
    """{step: {field: value}} from one console log or JSONL file; a step printed twice (a resumed
    run) keeps its last line. Raises InputError naming the file (and line) when it cannot."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    steps: dict[int, dict[str, float]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{number}"
        stripped = line.strip()
        if stripped.startswith("{"):
            try:
                record = json.loads(stripped)
            except json.JSONDecodeError:
                continue  # a dict printed by the job, not a metrics record
            if not isinstance(record, dict) or "step" not in record:
                continue
            data = record.get("data", record)
            if not isinstance(data, dict):
                continue
            step = int(_number(record["step"], where, "step"))
            steps[step] = _metrics(data, where)
            continue
        match = _CONSOLE.search(line)
        if match:
            steps[int(match.group(1))] = _metrics(_console_pairs(match.group(2)), where)
    if not any(steps.values()):
        raise InputError(
            f"{path}: no verl step metrics found (expected console lines "
            f"'step:N - timing_s/gen:... - ...' or JSON lines with 'step' and 'data')"
        )
    return {step: values for step, values in sorted(steps.items()) if values}
