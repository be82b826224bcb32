"""OpenAI's fine-tuning JSONL rendered into rlguard's stage rows with a tokenizer's chat template
(`python -m rlguard.train.chat_data`): each method's shape, and the errors a user can fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.train.chat_data import render_file
from rlguard.train.tokenizer import train_tokenizer

TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
SYSTEM = {"role": "system", "content": "Be brief."}
USER = {"role": "user", "content": "What is 2 + 2?"}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tokenizer")
    tokenizer = train_tokenizer(["What is 2 + 2? The final answer is 4."] * 4, vocab_size=300)
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(path)
    return path


def rendered(tmp_path: Path, model_dir: Path, method: str, rows: list[dict]) -> list[dict]:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert render_file(method, str(model_dir), source, tmp_path / "out.jsonl") == len(rows)
    return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]


def test_supervised_trains_on_the_last_assistant_turn(tmp_path: Path, model_dir: Path) -> None:
    messages = [SYSTEM, USER, {"role": "assistant", "content": [{"type": "text", "text": "4"}]}]
    [row] = rendered(tmp_path, model_dir, "supervised", [{"messages": messages}])
    assert row == {"prompt": "<system>Be brief.<user>What is 2 + 2?<assistant>", "completion": "4"}


def test_dpo_pairs_the_preferred_and_non_preferred_outputs(tmp_path: Path, model_dir: Path) -> None:
    example = {
        "input": {"messages": [USER]},
        "preferred_output": [{"role": "assistant", "content": "4"}],
        "non_preferred_output": [{"role": "assistant", "content": "5"}],
    }
    [row] = rendered(tmp_path, model_dir, "dpo", [example])
    assert row == {"prompt": "<user>What is 2 + 2?<assistant>", "chosen": "4", "rejected": "5"}


def test_reinforcement_keeps_the_whole_line_as_the_graders_item(
    tmp_path: Path, model_dir: Path
) -> None:
    example = {"messages": [USER], "answer": "4", "tags": ["sum"]}
    [row] = rendered(tmp_path, model_dir, "reinforcement", [example])
    assert row == {"prompt": "<user>What is 2 + 2?<assistant>", "metadata": example}


def test_a_tokenizer_without_a_chat_template_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    train_tokenizer(["some text"] * 4, vocab_size=300).save_pretrained(plain)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"messages": [USER]}) + "\n")
    with pytest.raises(InputError, match="has no chat template"):
        render_file("reinforcement", str(plain), source, tmp_path / "out.jsonl")


def test_a_bad_line_is_one_line_and_exit_2_naming_it(tmp_path: Path, model_dir: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"messages": [USER]}) + "\n")  # no assistant turn
    args = ["supervised", str(model_dir), str(source), str(tmp_path / "out.jsonl")]
    done = subprocess.run(
        [sys.executable, "-m", "rlguard.train.chat_data", *args], capture_output=True, text=True
    )
    assert done.returncode == 2 and not (tmp_path / "out.jsonl").exists()
    assert done.stderr.strip() == (
        f"error: {source}: line 1: messages: a supervised example needs an assistant turn"
    )
