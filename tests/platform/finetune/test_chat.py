"""OpenAI's `/v1/chat/completions` through the official `openai` SDK against the app on loopback
(a worker thread generates; test_chat_live.py runs it on Ray): a tiny Llama registered as a base
model answers `ChatCompletion`s that conform to OpenAI's published OpenAPI description, greedy
and seeded sampling repeat themselves, `n`, `max_tokens` and `stop` are kept; a tenant's
fine-tuned model is served from its stored checkpoint, to that tenant only; bad input is a 4xx
in OpenAI's error shape naming the field."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import torch
from openai.types.chat import ChatCompletion
from openai.types.fine_tuning.alpha import GraderRunResponse
from openapi_schema import assert_conforms, checked
from sdk_server import served, served_platform
from tiny_chat import USER, chat_model

from rlguard.judges.llm import chat_model as inference
from rlguard.judges.llm.chat_model import Sampling
from rlguard.platform import states
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.db import Checkpoint, FineTuningJob, Job
from rlguard.platform.errors import ApiError, error_body
from rlguard.platform.finetune.base_models import parse_model
from rlguard.platform.finetune.inference_pool import MAX_IN_FLIGHT, InferencePool
from rlguard.platform.uploader import upload_checkpoint

CHAT = "/chat/completions"


def pickled(path: Path) -> Path:
    """The model at `path` with its weights as a pickle (`pytorch_model.bin`) only."""
    from safetensors.torch import load_file

    torch.save(load_file(path / "model.safetensors"), path / "pytorch_model.bin")
    (path / "model.safetensors").unlink()
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("chat-models")
    return {
        "tiny": chat_model(root / "tiny"),
        "plain": chat_model(root / "plain", None),
        "pickled": pickled(chat_model(root / "pickled")),
    }


@pytest.fixture(scope="module")
def client(
    tmp_path_factory: pytest.TempPathFactory, models: dict[str, Path]
) -> Iterator[openai.OpenAI]:
    registered = [parse_model(f"{name}={path}") for name, path in models.items()]
    with served(tmp_path_factory.mktemp("chat"), models=registered) as (client, _):
        yield client


GRADERS_RUN = "/fine_tuning/alpha/graders/run"


def complete(client: openai.OpenAI, **settings: Any) -> ChatCompletion:
    """A completion of the tiny model (USER's question, greedy, 8 tokens unless `settings`
    say otherwise), checked against OpenAI's schema."""
    call = client.chat.completions.with_raw_response.create
    request = {"model": "tiny", "messages": [USER], "temperature": 0, "max_tokens": 8}
    return checked(call, CHAT, "post", **{**request, **settings})


def score(client: openai.OpenAI, model: str) -> GraderRunResponse:
    """A score_model grader on `model`, run on one sample (the tiny model's answer, whatever
    it is, is the reward or a parse error)."""
    grader = {
        "type": "score_model",
        "name": "judge",
        "model": model,
        "input": [{"role": "user", "content": "Score {{sample.output_text}}"}],
        "sampling_params": {"temperature": 0, "max_completions_tokens": 4},
    }
    call = client.fine_tuning.alpha.graders.with_raw_response.run
    return checked(call, GRADERS_RUN, "post", grader=grader, model_sample="4", item={})


def test_a_completion_is_openais_chat_completion(client: openai.OpenAI) -> None:
    done = complete(client, max_completion_tokens=8, max_tokens=openai.NOT_GIVEN)
    assert isinstance(done, ChatCompletion) and done.id.startswith("chatcmpl-")
    assert (done.object, done.model, len(done.choices)) == ("chat.completion", "tiny", 1)
    [choice] = done.choices
    assert (choice.index, choice.message.role, choice.message.refusal) == (0, "assistant", None)
    assert isinstance(choice.message.content, str) and choice.finish_reason in ("stop", "length")
    usage = done.usage
    assert usage is not None and usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 8
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_greedy_and_seeded_completions_repeat_themselves(client: openai.OpenAI) -> None:
    texts = [complete(client).choices[0].message.content for _ in range(2)]
    assert texts[0] == texts[1]
    seeded = [complete(client, temperature=1.0, seed=3, n=3) for _ in range(2)]
    assert [c.message.content for c in seeded[0].choices] == [
        c.message.content for c in seeded[1].choices
    ]


def test_n_choices_each_indexed_and_counted(client: openai.OpenAI) -> None:
    sampled = complete(client, n=2, temperature=1.0, seed=1)
    assert [c.index for c in sampled.choices] == [0, 1]
    greedy, one = complete(client, n=2), complete(client)
    assert [c.message.content for c in greedy.choices] == [one.choices[0].message.content] * 2
    assert greedy.usage is not None and one.usage is not None
    assert greedy.usage.completion_tokens == 2 * one.usage.completion_tokens  # every choice's


def test_max_tokens_ends_a_choice_with_length(client: openai.OpenAI) -> None:
    done = complete(client, max_tokens=3)  # the tiny model's greedy text never ends itself
    assert done.choices[0].finish_reason == "length"
    assert done.usage is not None and done.usage.completion_tokens == 3
    longer = complete(client, max_tokens=30).choices[0].message.content or ""
    assert len(longer) > len(done.choices[0].message.content or "")


def test_a_stop_sequence_ends_the_text_before_it(client: openai.OpenAI) -> None:
    """A seeded sample, then the same one with a stop sequence from its middle: cut there. A
    stop sequence is sought in the completion only, never across the prompt's end."""
    sampled = {"temperature": 1.0, "seed": 5, "max_tokens": 30}
    text = complete(client, **sampled).choices[0].message.content or ""
    stop = text[len(text) // 2 : len(text) // 2 + 2]
    assert len(stop) == 2, f"the sample {text!r} is too short to cut"
    [choice] = complete(client, stop=[stop], **sampled).choices
    assert choice.finish_reason == "stop" and choice.message.content == text[: text.find(stop)]
    greedy = complete(client, max_tokens=30).choices[0].message.content or ""
    across = ">" + greedy[0]  # the rendered prompt's last character, then the first generated
    [choice] = complete(client, stop=across, max_tokens=30).choices
    assert choice.message.content == (greedy[: greedy.find(across)] if across in greedy else greedy)


BAD = {  # name: (settings, status, param, words of the message)
    "unknown model": ({"model": "gpt-4o"}, 404, "model", "The model 'gpt-4o' does not exist"),
    "no messages": ({"messages": []}, 422, "messages", "at least 1 item"),
    "bad role": (
        {"messages": [{"role": "robot", "content": "hi"}]},
        422,
        "messages.0.role",
        "'system', 'developer', 'user' or 'assistant'",
    ),
    "tool message": (
        {"messages": [{"role": "tool", "content": "4", "tool_call_id": "c1"}]},
        422,
        "messages.0.role",
        "Input should be",
    ),
    "image part": (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
        422,
        "messages.0.content",
        "only text parts are served (got type 'image_url')",
    ),
    "stream": ({"stream": True}, 400, "stream", "streamed completions are not served"),
    "n too big": ({"n": 9}, 422, "n", "less than or equal to 8"),
    "max_tokens too big": ({"max_tokens": 5000}, 422, "max_tokens", "less than or equal to 1024"),
    "two max tokens": ({"max_completion_tokens": 4}, 400, "max_tokens", "not two different"),
    "temperature": ({"temperature": 3}, 422, "temperature", "less than or equal to 2"),
    "too many stops": ({"stop": list("abcde")}, 422, "stop", "up to 4 stop sequences"),
    "tools": (
        {"tools": [{"type": "function", "function": {"name": "f"}}]},
        400,
        "tools",
        "tools: not supported",
    ),
    "logprobs": ({"logprobs": True}, 400, "logprobs", "logprobs: not supported"),
    "json schema": (
        {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}},
        400,
        "response_format",
        "not supported",
    ),
    "unknown field": ({"extra_body": {"beam_width": 4}}, 422, "beam_width", "Extra inputs"),
    "no chat template": ({"model": "plain"}, 400, "model", "has no chat template"),
    "long prompt": (
        {"messages": [{"role": "user", "content": "What is 2 + 2? " * 100}]},
        400,
        "messages",
        "leaves no room in this model's context of 128 tokens",
    ),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_is_a_4xx_naming_the_field(client: openai.OpenAI, name: str) -> None:
    settings, status, param, said = BAD[name]
    with pytest.raises(openai.APIStatusError) as refused:
        complete(client, **settings)
    assert refused.value.status_code == status
    assert refused.value.body["param"] == param
    assert said in refused.value.body["message"]


def test_weights_in_a_pickle_are_not_loaded(client: openai.OpenAI) -> None:
    """A pickle is code: a fine-tuned model is a tenant's job's output, so none is read."""
    with pytest.raises(openai.InternalServerError) as refused:
        complete(client, model="pickled")
    assert refused.value.body["code"] == "model_error"
    assert "safetensors only" in refused.value.body["message"]


def test_a_completion_past_the_bound_is_a_429_in_openais_shape() -> None:
    full = InferencePool(on_ray=False)
    full.in_flight = MAX_IN_FLIGHT  # as if that many were running or waiting
    with pytest.raises(ApiError) as refused:
        asyncio.run(full.complete("/no/model", [USER], Sampling(max_tokens=1)))
    e = refused.value
    assert (e.status, e.code, e.headers) == (429, "rate_limit_exceeded", {"Retry-After": "5"})
    body = json.loads(error_body(e.status, e.message, e.code, e.param).body)
    assert_conforms(body, CHAT, "post", status=429)


def test_harmless_fields_are_ignored_and_neutral_ones_pass(client: openai.OpenAI) -> None:
    neutral = {"user": "u1", "store": False, "logprobs": False, "frequency_penalty": 0}
    done = complete(client, metadata={"k": "v"}, response_format={"type": "text"}, **neutral)
    assert done.choices[0].message.content == complete(client).choices[0].message.content


def finish(platform: Any, ft_id: str, model_dir: Path, store: ArtifactStore) -> None:
    """Leave a fine-tuning job as one that succeeded would: its final model deposited in the
    artifact store and recorded as its checkpoint."""
    with platform.store.transaction() as s:
        ft = s.get(FineTuningJob, ft_id)
        job = s.get(Job, ft.job_id)
        job.status = states.SUCCEEDED
        key = ArtifactStore.new_checkpoint_key(ft.tenant_id, job.id, 5)
        job_dir = model_dir.parent / "job"
        shutil.copytree(model_dir, job_dir / "output" / "final")
        upload_checkpoint(store.uri, str(job_dir), "output/final", key, 5)
        s.add(
            Checkpoint(
                id="ckpt-1",
                job_id=job.id,
                run_id="run-1",
                step=5,
                path="output/final",
                store_key=key,
                metrics={},
                created_at=time.time(),
            )
        )


def test_a_fine_tuned_model_is_served_to_its_tenant_only(tmp_path: Path) -> None:
    base = parse_model(f"tiny={chat_model(tmp_path / 'tiny')}")
    tuned = chat_model(tmp_path / "tuned" / "model", seed=1)  # other weights
    example = {"messages": [USER, {"role": "assistant", "content": "4"}]}
    with served_platform(tmp_path / "platform", models=[base]) as (platform, owner, other):
        data = (json.dumps(example) + "\n").encode() * 10
        upload = owner.files.create(file=("t.jsonl", data), purpose="fine-tune")
        job = owner.fine_tuning.jobs.create(model="tiny", training_file=upload.id, suffix="s")
        finish(platform, job.id, tuned, ArtifactStore(platform.store_uri))
        name = owner.fine_tuning.jobs.retrieve(job.id).fine_tuned_model
        assert name is not None and name.startswith("ft:tiny:acme:s:")
        done = complete(owner, model=name)
        direct = inference.complete(str(tuned), [USER], Sampling(max_tokens=8, temperature=0))
        assert isinstance(direct, inference.Completion)
        assert (done.model, done.choices[0].message.content) == (name, direct.choices[0].text)
        cached = list((tmp_path / "platform" / "model-cache").iterdir())
        assert [p.name.startswith(".staging-") for p in cached] == [False]
        with pytest.raises(openai.NotFoundError, match=f"The model '{name}' does not exist"):
            complete(other, model=name)
        scored = score(owner, name)  # as a score_model grader's model, too
        assert scored.metadata.sampled_model_name == name
        with pytest.raises(openai.BadRequestError, match=r"grader\.model: the model does not"):
            score(other, name)
        owner.models.delete(name)
        with pytest.raises(openai.NotFoundError, match=f"The model '{name}' does not exist"):
            complete(owner, model=name)
