"""OpenAI's fine-tuning JSONL as rlguard's stage data, rendered with the model's chat template.

    python -m rlguard.train.chat_data METHOD MODEL_DIR IN.jsonl OUT.jsonl

- supervised: `{"messages": [...]}` -> `{prompt, completion}`: the last assistant turn is the
  completion, every turn before it (rendered with `add_generation_prompt`) the prompt;
- dpo: `{"input": {"messages"}, "preferred_output", "non_preferred_output"}` ->
  `{prompt, chosen, rejected}`;
- reinforcement: `{"messages": [...], ...}` -> `{prompt, metadata}`, the whole line as the
  metadata, which is the item a grader's `{{item.x}}` reads.

Rendering uses `tokenizer.apply_chat_template` (Jinja in transformers' sandboxed environment), as
TRL does with conversational data; a tokenizer without a chat template is an error that says so.
It runs inside the job, on the tenant's files, never in the platform's server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer, PreTrainedTokenizerBase

from rlguard.errors import InputError
from rlguard.io import write_text
from rlguard.jsonl import read_jsonl

METHODS = ("supervised", "dpo", "reinforcement")


def _text(message: dict[str, Any]) -> str:
    """A message's text: its string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _prompt(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, Any]]) -> str:
    turns = [{"role": m["role"], "content": _text(m)} for m in messages]
    return tokenizer.apply_chat_template(turns, add_generation_prompt=True, tokenize=False)


def convert(method: str, tokenizer: PreTrainedTokenizerBase, row: dict[str, Any]) -> dict:
    """One OpenAI example as the stage's row."""
    if method == "dpo":
        return {
            "prompt": _prompt(tokenizer, row["input"]["messages"]),
            "chosen": _text(row["preferred_output"][-1]),
            "rejected": _text(row["non_preferred_output"][-1]),
        }
    messages = row["messages"]
    if method == "reinforcement":
        return {"prompt": _prompt(tokenizer, messages), "metadata": row}
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if last is None:
        raise ValueError("messages: a supervised example needs an assistant turn")
    return {"prompt": _prompt(tokenizer, messages[:last]), "completion": _text(messages[last])}


def render_file(method: str, model_dir: str, source: Path, target: Path) -> int:
    """Write `target` from `source`; the number of rows. InputError names the line."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if not tokenizer.chat_template:
        raise InputError(f"{model_dir}: the tokenizer has no chat template to render messages")
    rows = []
    for number, row in read_jsonl(source):
        try:
            rows.append(convert(method, tokenizer, row))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{source}: line {number}: {e}") from None
    write_text(target, "".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] not in METHODS:
        print(
            f"usage: python -m rlguard.train.chat_data {{{','.join(METHODS)}}} "
            "MODEL_DIR IN.jsonl OUT.jsonl",
            file=sys.stderr,
        )
        return 2
    method, model_dir, source, target = argv
    try:
        count = render_file(method, model_dir, Path(source), Path(target))
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{target}: {count} {method} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
