"""`rlguard train BAD.yaml`: every config mistake is one `error:` line naming the file and the
field, exit code 2, no traceback, and nothing written to the output directory.

The configs fail before any model loads, so the policy "model" is an empty directory.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli_runner import cli

Build = Callable[[Path, dict[str, Any]], tuple[Path, list[str]]]


def valid_config(tmp: Path) -> dict[str, Any]:
    (tmp / "base").mkdir(exist_ok=True)
    prompts = tmp / "prompts.jsonl"
    prompts.write_text('{"prompt": "What is 1 + 1? ", "metadata": {"answer": "2"}}\n')
    return {
        "output_dir": str(tmp / "out"),
        "policy": {"path": str(tmp / "base")},
        "steps": 1,
        "tasks": [
            {
                "name": "math",
                "prompts": str(prompts),
                "reward": {"function": "rlguard.train.toy:proxy_reward"},
                "judges": ["math"],
            }
        ],
    }


def edited(edit: Callable[[dict[str, Any]], Any], *expect: str) -> Build:
    """A valid config changed by `edit`, written to bad.yaml; expect the file and `expect`."""

    def build(tmp: Path, config: dict[str, Any]) -> tuple[Path, list[str]]:
        config = copy.deepcopy(config)
        edit(config)
        path = tmp / "bad.yaml"
        path.write_text(yaml.safe_dump(config))
        return path, [str(path), *expect]

    return build


def raw_text(text: str, *expect: str) -> Build:
    def build(tmp: Path, config: dict[str, Any]) -> tuple[Path, list[str]]:
        path = tmp / "bad.yaml"
        path.write_text(text)
        return path, [str(path), *expect]

    return build


def task(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda config: config["tasks"][0].update(changes)


def _missing_prompts(tmp: Path, config: dict[str, Any]) -> tuple[Path, list[str]]:
    nowhere = str(tmp / "nowhere.jsonl")
    return edited(task(prompts=nowhere), "tasks.0.prompts", nowhere)(tmp, config)


def _missing_policy(tmp: Path, config: dict[str, Any]) -> tuple[Path, list[str]]:
    nowhere = str(tmp / "no-model")
    return edited(lambda c: c["policy"].update(path=nowhere), "policy.path", nowhere)(tmp, config)


def _missing_judge_model(tmp: Path, config: dict[str, Any]) -> tuple[Path, list[str]]:
    nowhere = str(tmp / "no-judge")
    judges = [{"name": "safety", "model": nowhere}]
    return edited(task(judges=judges), "tasks.0.judges.0.model", nowhere)(tmp, config)


def _missing_config(tmp: Path, config: dict[str, Any]) -> tuple[Path, list[str]]:
    path = tmp / "absent.yaml"
    return path, [str(path), "no such file"]


BAD = [
    pytest.param(edited(task(optimizer="sgd"), "tasks.0.optimizer", "sgd"), id="optimizer"),
    pytest.param(
        edited(lambda c: c["tasks"][0].pop("prompts"), "tasks.0.prompts"), id="no-prompts"
    ),
    pytest.param(edited(task(weight=0), "tasks", "weight"), id="weights-zero"),
    pytest.param(_missing_prompts, id="prompts-file-missing"),
    pytest.param(edited(task(kl_max=0), "tasks.0.kl_max"), id="kl-max-zero"),
    pytest.param(edited(task(kl_max=-1.5), "tasks.0.kl_max", "-1.5"), id="kl-max-negative"),
    pytest.param(_missing_policy, id="policy-path-missing"),
    pytest.param(edited(lambda c: c.update(stage="rlhf"), "stage", "rlhf"), id="stage"),
    pytest.param(edited(task(judges=["nope"]), "tasks.0.judges.0", "nope"), id="judge-name"),
    pytest.param(edited(task(judges=["safety"]), "tasks.0.judges.0", "safety"), id="llm-judge"),
    pytest.param(edited(lambda c: c.update(bogus=1), "bogus"), id="top-level-field"),
    pytest.param(raw_text("- a\n- b\n", "mapping"), id="not-a-mapping"),
    pytest.param(raw_text("a: [1, 2\nb: c\n", "YAML"), id="invalid-yaml"),
    pytest.param(_missing_judge_model, id="judge-model-missing"),
    pytest.param(edited(lambda c: c.update(device="gpu"), "device", "gpu", "cuda:N"), id="device"),
    pytest.param(
        edited(lambda c: c.update(devices={"reference": "cuda:x"}), "devices.reference", "cuda:x"),
        id="model-device",
    ),
    pytest.param(
        edited(lambda c: c.update(devices={"judge": "cpu"}), "devices.judge"), id="device-role"
    ),
    pytest.param(
        edited(lambda c: c.update(mixed_precision="fp8"), "mixed_precision", "fp8"), id="precision"
    ),
    pytest.param(
        edited(
            lambda c: (c.update(mixed_precision="bf16"), c["policy"].update(dtype="bfloat16")),
            "mixed_precision",
            "policy.dtype",
        ),
        id="precision-master-weights",
    ),
    pytest.param(
        edited(lambda c: c.update(lora={"r": 4}, devices={"reference": "cpu"}), "devices"),
        id="lora-reference-device",
    ),
    pytest.param(
        edited(lambda c: c.update(micro_batch_size=0), "micro_batch_size", "0"), id="micro-batch"
    ),
    pytest.param(edited(lambda c: c.update(sharding="zero3"), "sharding", "zero3"), id="sharding"),
    pytest.param(
        edited(lambda c: c.update(sharding="fsdp", lora={"r": 4}), "sharding", "lora"),
        id="fsdp-lora",
    ),
    pytest.param(_missing_config, id="config-missing"),
]


@pytest.mark.parametrize("build", BAD)
def test_bad_config_is_one_error_line(monkeypatch, capsys, tmp_path, build) -> None:
    config = valid_config(tmp_path)
    path, expect = build(tmp_path, config)
    code, out, err = cli(monkeypatch, capsys, "train", str(path), "--no-progress")
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, repr(err)
    assert err.startswith("error:") and err.endswith("\n")
    for text in expect:
        assert text in err, (text, err)
    assert not (tmp_path / "out").exists()


def test_the_valid_config_passes_validation(tmp_path) -> None:
    """The cases above differ from a config that parses, so each error is the one edited in."""
    from rlguard.train.config import CGPOConfig, check_paths, parse_config

    config = parse_config(CGPOConfig, valid_config(tmp_path), "ok.yaml")
    check_paths(config.local_paths(), "ok.yaml")


def test_an_unknown_stop_rule_is_a_usage_error(tmp_path, monkeypatch, capsys):
    path = tmp_path / "any.yaml"
    path.write_text("stage: sft\n")
    code, out, err = cli(monkeypatch, capsys, "train", str(path), "--stop-rule", "sometimes")
    assert code == 2 and out == ""
    assert err.strip().startswith("error: option --stop-rule: unknown name 'sometimes'")


def test_the_stop_rule_hook_stops_on_k_declines_only():
    from rlguard.cli.train import stop_rule_hook
    from rlguard.cluster.registry import RULES, RuleParams

    hook = stop_rule_hook(RULES["evalstop"](RuleParams(k=3, min_delta=0.01, warmup=2)))
    scores = [0.2, 0.4, 0.6, 0.5, 0.4, 0.3]
    base = {"job_id": "j", "kind": "rlhf", "progress": 0.0, "loss": 0.0, "proxy": None}
    reasons = [hook({**base, "step": i, "score": s}) for i, s in enumerate(scores)]
    assert reasons[:5] == [None] * 5 and reasons[5]


def test_a_bare_no_in_yaml_means_no_mixed_precision(tmp_path):
    from rlguard.train.config import CGPOConfig, parse_config

    raw = yaml.safe_load("mixed_precision: no\n")
    assert raw == {"mixed_precision": False}  # YAML 1.1
    config = parse_config(CGPOConfig, {**valid_config(tmp_path), **raw}, "ok.yaml")
    assert config.mixed_precision == "no"


def test_only_cgpo_runs_data_parallel(tmp_path, monkeypatch, capsys):
    (tmp_path / "base").mkdir()
    (tmp_path / "sft.jsonl").write_text('{"prompt": "a", "completion": "b"}\n')
    config = {
        "stage": "sft",
        "output_dir": str(tmp_path / "out"),
        "data": str(tmp_path / "sft.jsonl"),
    }
    path = tmp_path / "sft.yaml"
    path.write_text(yaml.safe_dump({**config, "model": {"path": str(tmp_path / "base")}}))
    code, out, err = cli(monkeypatch, capsys, "train", str(path), "--nproc", "2")
    assert code == 2 and out == ""
    assert err == "error: option --nproc: only the cgpo stage runs data-parallel (got sft)\n"
    assert not (tmp_path / "out").exists()
