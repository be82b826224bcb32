"""The offline stages (SFT, Bradley-Terry reward model, DPO) through `rlguard train stage.yaml`,
on the toy world: each improves its own objective and saves an HF model that loads back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

from cli_runner import cli
from rlguard.train import offline, toy
from rlguard.train.logprobs import token_logprobs
from rlguard.train.rewards import ClassifierReward
from rlguard.train.rollout import encode_completions


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    torch.manual_seed(0)  # the base model's initial weights
    toy.build(root, seed=0)
    return root


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def prompts(world: Path, name: str) -> list[dict[str, Any]]:
    lines = (world / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def case_pairs(world: Path) -> list[dict[str, str]]:
    """Clearly separable preferences: the lowercase answer over the same answer in uppercase."""
    rows = prompts(world, "style_prompts.jsonl")[:24]
    pairs = []
    for i, row in enumerate(rows):
        answer = f"the {row['prompt'].split()[2]} is {toy.ADJECTIVES[i % len(toy.ADJECTIVES)]}."
        pairs.append({"prompt": row["prompt"], "chosen": answer, "rejected": answer.upper()})
    return pairs


def math_pairs(world: Path) -> list[dict[str, str]]:
    """The correct final answer over a wrong one."""
    pairs = []
    for row in prompts(world, "math_prompts.jsonl")[:24]:
        truth = int(row["metadata"]["answer"])
        pairs.append(
            {
                "prompt": row["prompt"],
                "chosen": f"The final answer is {truth}.",
                "rejected": f"The final answer is {(truth + 2) % 5}.",
            }
        )
    return pairs


def train_stage(monkeypatch, capsys, tmp: Path, config: dict[str, Any]) -> Path:
    """Run a stage from its YAML; it prints one JSON object naming the saved model."""
    path = tmp / f"{config['stage']}.yaml"
    path.write_text(yaml.safe_dump(config))
    code, out, err = cli(monkeypatch, capsys, "train", str(path), "--no-progress")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1, out
    payload = json.loads(lines[0])
    assert payload == {"stage": config["stage"], "model": str(tmp / "out" / "final")}
    final = Path(payload["model"])
    assert (final / "model.safetensors").is_file()
    rows = len(Path(config["data"]).read_text().splitlines())
    steps = config.get("epochs", 1) * -(-rows // config.get("batch_size", 8))  # the defaults
    assert json.loads((final / "trainer_state.json").read_text()) == {"global_step": steps}
    return final


def stage_config(world: Path, tmp: Path, stage: str, data: Path, **more: Any) -> dict[str, Any]:
    return {
        "stage": stage,
        "output_dir": str(tmp / "out"),
        "model": {"path": str(world / "base")},
        "data": str(data),
        **more,
    }


def sequence_logps(model, tokenizer, rows: list[dict[str, str]], key: str) -> torch.Tensor:
    encoded = encode_completions(tokenizer, [r["prompt"] for r in rows], [r[key] for r in rows])
    with torch.no_grad():
        return token_logprobs(model.eval(), encoded).sum(dim=1)


def test_sft_lowers_completion_nll_and_saves_a_loadable_model(
    monkeypatch, capsys, tmp_path, world
) -> None:
    rows = prompts(world, "sft.jsonl")[:48]
    data = write_jsonl(tmp_path / "sft.jsonl", rows)
    tokenizer = AutoTokenizer.from_pretrained(world / "base")
    encoded = encode_completions(
        tokenizer, [r["prompt"] for r in rows], [r["completion"] for r in rows]
    )

    def nll(model) -> float:
        with torch.no_grad():
            logp = token_logprobs(model.eval(), encoded)
        return float(-logp.sum() / encoded.completion_mask.sum())

    before = nll(AutoModelForCausalLM.from_pretrained(world / "base"))
    saved: list[torch.nn.Module] = []
    save_final = offline.save_final

    def spy(model, tokenizer, output_dir, steps):  # keeps the in-memory model to compare with
        saved.append(model)
        return save_final(model, tokenizer, output_dir, steps)

    monkeypatch.setattr(offline, "save_final", spy)
    config = stage_config(world, tmp_path, "sft", data, epochs=2, learning_rate=1e-3)
    final = train_stage(monkeypatch, capsys, tmp_path, config)

    loaded = AutoModelForCausalLM.from_pretrained(final).eval()
    assert nll(loaded) < before - 0.5
    ids = encoded.prompt_ids[:4]
    with torch.no_grad():
        expected = saved[0].eval()(input_ids=ids).logits
        assert torch.equal(loaded(input_ids=ids).logits, expected)
    assert len(AutoTokenizer.from_pretrained(final)) == len(tokenizer)


def test_reward_model_learns_a_separable_preference(monkeypatch, capsys, tmp_path, world) -> None:
    pairs = case_pairs(world)
    data = write_jsonl(tmp_path / "prefs.jsonl", pairs)
    config = stage_config(
        world, tmp_path, "reward", data, epochs=3, batch_size=8, learning_rate=1e-3
    )
    final = train_stage(monkeypatch, capsys, tmp_path, config)

    classifier = AutoModelForSequenceClassification.from_pretrained(final)
    assert classifier.config.num_labels == 1
    reward = ClassifierReward.from_pretrained(str(final))
    prompts_ = [p["prompt"] for p in pairs]
    chosen = reward(prompts_, [p["chosen"] for p in pairs])
    rejected = reward(prompts_, [p["rejected"] for p in pairs])
    assert chosen.shape == rejected.shape == (len(pairs),)
    accuracy = float((chosen > rejected).float().mean())
    assert accuracy >= 0.9, accuracy


def test_dpo_increases_the_implicit_reward_margin(monkeypatch, capsys, tmp_path, world) -> None:
    pairs = math_pairs(world)
    data = write_jsonl(tmp_path / "prefs.jsonl", pairs)
    config = stage_config(
        world, tmp_path, "dpo", data, epochs=2, batch_size=8, learning_rate=1e-3, beta=0.1
    )
    final = train_stage(monkeypatch, capsys, tmp_path, config)

    tokenizer = AutoTokenizer.from_pretrained(final)
    policy = AutoModelForCausalLM.from_pretrained(final)
    reference = AutoModelForCausalLM.from_pretrained(world / "base")
    # before training the policy is the reference, so every margin starts at exactly 0
    margin = (
        sequence_logps(policy, tokenizer, pairs, "chosen")
        - sequence_logps(reference, tokenizer, pairs, "chosen")
    ) - (
        sequence_logps(policy, tokenizer, pairs, "rejected")
        - sequence_logps(reference, tokenizer, pairs, "rejected")
    )
    assert float(margin.mean()) > 0.5
    assert float((margin > 0).float().mean()) >= 0.75


BAD_ROWS = [
    pytest.param("sft", {"prompt": "p "}, "'completion'", id="sft-missing-completion"),
    pytest.param("sft", {"prompt": "p ", "completion": 3}, "'completion'", id="sft-not-a-string"),
    pytest.param("reward", {"prompt": "p ", "chosen": "a"}, "'rejected'", id="reward-missing"),
    pytest.param(
        "dpo", {"prompt": "p ", "chosen": None, "rejected": "b"}, "'chosen'", id="dpo-not-a-string"
    ),
]


@pytest.mark.parametrize(("stage", "bad", "field"), BAD_ROWS)
def test_bad_data_row_is_one_error_line(
    monkeypatch, capsys, tmp_path, world, stage, bad, field
) -> None:
    good = {"prompt": "p ", "completion": "c", "chosen": "a", "rejected": "b"}
    data = write_jsonl(tmp_path / "data.jsonl", [good, bad])
    path = tmp_path / "stage.yaml"
    path.write_text(yaml.safe_dump(stage_config(world, tmp_path, stage, data)))
    code, out, err = cli(monkeypatch, capsys, "train", str(path), "--no-progress")
    assert code == 2
    assert out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("error:"), err
    assert f"{data}:2" in err and field in err, err
    assert not (tmp_path / "out").exists()
