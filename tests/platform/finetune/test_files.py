"""OpenAI's `/v1/files` as the official `openai` SDK uses it, against the app on loopback:
upload, list, retrieve, content, delete parse into the SDK's own types and conform to OpenAI's
published OpenAPI description; a bad line, a wrong purpose and a file over the cap are 4xx in
OpenAI's error shape and store nothing; another tenant's file answers exactly as a missing one."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from openapi_schema import checked
from sdk_server import served

CHAT = {"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}
PREFERENCE = {
    "input": {"messages": [{"role": "user", "content": "hi"}]},
    "preferred_output": [{"role": "assistant", "content": "hello"}],
    "non_preferred_output": [{"role": "assistant", "content": "go away"}],
}


def jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def stored(tmp_path: Path) -> list[Path]:
    return sorted(p for p in (tmp_path / "artifacts").rglob("*") if p.is_file())


def test_a_file_round_trips_through_the_sdk(tmp_path: Path) -> None:
    data = jsonl(CHAT, CHAT, PREFERENCE)
    with served(tmp_path) as (client, _):
        raw = client.files.with_raw_response
        upload = {"file": ("train.jsonl", data), "purpose": "fine-tune"}
        made = checked(raw.create, "/files", "post", **upload)
        assert isinstance(made, openai.types.FileObject)
        assert (made.filename, made.bytes, made.purpose, made.status) == (
            "train.jsonl",
            len(data),
            "fine-tune",
            "processed",
        )
        other = client.files.create(file=("valid.jsonl", jsonl(CHAT)), purpose="fine-tune")
        listed = checked(raw.list, "/files", "get")
        assert [f.id for f in listed.data] == [other.id, made.id]  # newest first
        page = checked(raw.list, "/files", "get", order="asc", limit=1)
        assert [f.id for f in page.data] == [made.id] and page.has_more
        assert checked(raw.retrieve, "/files/{file_id}", "get", file_id=made.id) == made
        assert client.files.content(made.id).content == data
        deleted = checked(raw.delete, "/files/{file_id}", "delete", file_id=made.id)
        assert isinstance(deleted, openai.types.FileDeleted) and deleted.deleted
        with pytest.raises(openai.NotFoundError, match=f"No such File object: {made.id}"):
            client.files.retrieve(made.id)
        assert [f.id for f in client.files.list()] == [other.id]


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (jsonl(CHAT) + b"{not json\n", "bad.jsonl: line 2: not JSON"),
        (jsonl(CHAT, {"messages": [{"role": "bot", "content": "x"}]}), "line 2: messages.0.role"),
        (jsonl({**PREFERENCE, "preferred_output": []}), "line 1: preferred_output"),
        (b"[1, 2]\n", "line 1: not a JSON object"),
        (b"\n\n", "holds no example"),
        (b"\xff\xfe\n", "line 1: not UTF-8"),
    ],
)
def test_a_bad_file_is_a_400_naming_the_line_and_field_and_nothing_is_stored(
    tmp_path: Path, lines: bytes, said: str
) -> None:
    with served(tmp_path) as (client, _):
        with pytest.raises(openai.BadRequestError, match=said) as refused:
            client.files.create(file=("bad.jsonl", lines), purpose="fine-tune")
        assert refused.value.body["param"] == "file"
        assert client.files.list().data == [] and stored(tmp_path) == []


def test_another_purpose_and_a_file_over_the_cap_are_refused(tmp_path: Path) -> None:
    with served(tmp_path, file_mb=1) as (client, _):
        with pytest.raises(openai.BadRequestError, match="purpose: only 'fine-tune'"):
            client.files.create(file=("b.jsonl", jsonl(CHAT)), purpose="batch")
        big = jsonl(CHAT) * (2 * (1 << 20) // len(jsonl(CHAT)))
        with pytest.raises(openai.APIStatusError) as refused:
            client.files.create(file=("big.jsonl", big), purpose="fine-tune")
        assert refused.value.status_code == 413
        assert client.files.list().data == [] and stored(tmp_path) == []


def test_another_tenants_file_answers_as_a_missing_one(tmp_path: Path) -> None:
    with served(tmp_path) as (owner, other):
        made = owner.files.create(file=("t.jsonl", jsonl(CHAT)), purpose="fine-tune")
        for call in (other.files.retrieve, other.files.content, other.files.delete):
            with pytest.raises(openai.NotFoundError, match=f"No such File object: {made.id}"):
                call(made.id)
        assert other.files.list().data == []
        assert owner.files.retrieve(made.id).id == made.id
