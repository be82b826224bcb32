"""`/v1/chat/completions` on a live `rlguard serve` (Ray): the completion runs as a Ray task of
the server's cluster, not in the server, and answers as in process (test_chat.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import openai
import pytest
from openai.types.chat import ChatCompletion
from openapi_schema import checked
from tiny_chat import USER, chat_model

from rlguard.platform.ray_head import temp_dir

pytestmark = pytest.mark.ray


def text(path: Path) -> str:
    return path.read_text(errors="replace")


def test_a_base_model_answers_from_a_ray_task(tmp_path: Path, live_server) -> None:  # type: ignore[no-untyped-def]
    model = chat_model(tmp_path / "world" / "tiny")
    subprocess.run(["chmod", "-R", "a+rX", str(tmp_path / "world")], check=True)
    server = live_server("--gpus", "1", "--model", f"tiny={model}")
    _, key = server.tenant("acme")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    create = client.chat.completions.with_raw_response.create
    request = {"model": "tiny", "messages": [USER], "temperature": 0, "max_tokens": 6, "n": 2}
    done = checked(create, "/chat/completions", "post", **request)
    assert isinstance(done, ChatCompletion) and [c.index for c in done.choices] == [0, 1]
    assert done.choices[0].finish_reason == "length"
    again = checked(create, "/chat/completions", "post", **request)
    assert again.choices[0].message.content == done.choices[0].message.content
    # transformers' "Loading weights" progress: in a Ray worker's log (one, or two where Ray
    # leased the second task another idle worker), never in the server's
    logs = temp_dir(server.data_dir) / "session_latest" / "logs"
    assert any("Loading weights" in text(p) for p in logs.glob("worker-*.err"))
    assert "Loading weights" not in text(server.data_dir / "server.log")
    with pytest.raises(openai.NotFoundError, match="The model 'gpt-4o' does not exist"):
        client.chat.completions.create(model="gpt-4o", messages=[USER])
