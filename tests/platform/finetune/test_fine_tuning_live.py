"""Reinforcement, supervised and DPO fine-tuning through the official `openai` SDK against a live
`rlguard serve` (Ray, sandboxed jobs), only `base_url` and `api_key` changed.

The reinforcement job is the example of docs/platform.md, run as written. Its training file
asks only sums equal to 4 (the toy world's SFT model, rlguard.train.toy, given a chat template,
is the base); its validation file asks the other sums. Graded by a multigrader (the right
answer, and the answer's form), the policy learns the shortcut "answer 4 whatever is asked":
its train reward rises while its validation reward falls, which is what EvalStop stops on. The
job ends `succeeded` with the best checkpoint as its fine-tuned model and the decision, with
its evidence, in its events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from doc_blocks import blocks
from live_platform import LiveServer
from openapi_schema import checked

from rlguard.ports import unused_port

pytestmark = [pytest.mark.ray, pytest.mark.slow]
TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # the toy world's prompts
TERMINAL = ("succeeded", "failed", "cancelled")


def docs_example() -> str:
    """The reinforcement example of docs/platform.md ("Coming from OpenAI fine-tuning")."""
    [block] = [b.text for b in blocks("platform.md") if "fine_tuning.jobs.create(" in b.text]
    return block


def sum_row(a: int, b: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"What is {a} + {b}? "}], "answer": str(a + b)}


def jsonl(name: str, rows: list[dict[str, Any]]) -> tuple[str, bytes]:
    return name, "".join(json.dumps(r) + "\n" for r in rows).encode()


def base_model(root: Path) -> Path:
    """The toy world's SFT model with a chat template, readable by the jobs' uids."""
    from transformers import AutoTokenizer

    from rlguard.train.toy_runs import sft_toy

    policy = sft_toy(root, seed=1, epochs=12)
    tokenizer = AutoTokenizer.from_pretrained(policy)
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(policy)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    return policy


def wait(client: openai.OpenAI, job_id: str, until: tuple[str, ...] = TERMINAL, timeout_s=300):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while (job := client.fine_tuning.jobs.retrieve(job_id)).status not in until:
        assert time.monotonic() < deadline, f"{job_id} is still {job.status}"
        time.sleep(0.5)
    return job


def offline_jobs(client: openai.OpenAI, sums: list[tuple[int, int]]) -> dict[str, Any]:
    """A supervised and a DPO job on demonstrations and preference pairs of every sum."""

    def answer(a: int, b: int, shift: int = 0) -> dict[str, str]:
        return {"role": "assistant", "content": f"The final answer is {a + b + shift}."}

    chats = [{"messages": [*sum_row(a, b)["messages"], answer(a, b)]} for a, b in sums]
    pairs = [
        {
            "input": {"messages": sum_row(a, b)["messages"]},
            "preferred_output": [answer(a, b)],
            "non_preferred_output": [answer(a, b, shift=1)],
        }
        for a, b in sums
    ]
    made = {}
    for method, rows in (("supervised", chats), ("dpo", pairs)):
        upload = client.files.create(file=jsonl(f"{method}.jsonl", rows * 2), purpose="fine-tune")
        settings = {"hyperparameters": {"n_epochs": 1, "batch_size": 6}}
        made[method] = client.fine_tuning.jobs.create(
            model="toy",
            training_file=upload.id,
            method={"type": method, method: settings},
            suffix=method,
        )
    return made


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    data = tmp_path_factory.mktemp("ftlive")
    model = base_model(data.parent / f"{data.name}-world")
    # EvalStop: 2 declines in a row from the first eval (the shortcut's validation reward fell
    # 2 evals in a row from step 0 under 5 of 6 seeds of this job, seed 0 among them)
    args = ["--gpus", "2", "--k", "2", "--warmup", "0", "--grace-s", "5", "--model", f"toy={model}"]
    server = LiveServer(data, unused_port(), None, args).start()
    try:
        _, key = server.tenant("acme", quota_gpus=2)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
        sums = [(a, b) for a in range(3) for b in range(3)]
        offline = offline_jobs(client, sums)
        example = docs_example()
        env = {**os.environ, "RLGUARD_URL": server.url, "RLGUARD_API_KEY": key}
        done = subprocess.run(
            [sys.executable, "-c", example], env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        printed = done.stdout.splitlines()
        finished = client.fine_tuning.jobs.retrieve(printed[-1])
        yield {
            "server": server,
            "key": key,
            "client": client,
            "job": finished,
            "printed": printed,
            "offline": {method: wait(client, made.id) for method, made in offline.items()},
            "events": list(client.fine_tuning.jobs.list_events(finished.id, limit=1000)),
            "checkpoints": client.fine_tuning.jobs.checkpoints.list(finished.id, limit=100).data,
        }
    finally:
        server.stop()


def test_the_shortcut_is_stopped_early_and_ends_succeeded_with_its_best_checkpoint(platform):
    job, events = platform["job"], platform["events"][::-1]  # oldest first
    assert job.status == "succeeded", (job.error, [e.message for e in events[-5:]])
    metrics = [e.data for e in events if e.type == "metrics"]
    rewards = [m["full_valid_mean_reward"] for m in metrics]
    assert len(rewards) >= 3 and rewards[-1] < max(rewards)  # it fell from its best
    for m in metrics:  # each sub-grader's means: validation at every eval, train after steps
        splits = {"valid_mean_reward"} | ({"train_mean_reward"} if m["step"] else set())
        assert {k: set(v) for k, v in m["sub_graders"].items()} == {"right": splits, "form": splits}
    train = [m["train_mean_reward"] for m in metrics[1:]]  # the first eval is before any step
    assert train[-1] > train[0] and "train_mean_reward" not in metrics[0]  # the shortcut pays
    stop = [e for e in events if e.message.startswith("Stopping early (evalstop): ")]
    assert len(stop) == 1 and stop[0].data["stop"] is True and stop[0].data["evidence"]
    assert metrics[-1]["step"] < 6 * 3  # stopped before its last step
    best = max(metrics, key=lambda m: m["full_valid_mean_reward"])
    assert job.fine_tuned_model == f"ft:toy:acme:sums:{job.id.removeprefix('ftjob-')}"
    [delivered] = [c for c in platform["checkpoints"] if c.step_number == best["step"]]
    assert delivered.metrics.full_valid_mean_reward == pytest.approx(best["full_valid_mean_reward"])
    assert (
        delivered.fine_tuned_model_checkpoint == f"{job.fine_tuned_model}:ckpt-step-{best['step']}"
    )
    printed = platform["printed"]  # what the docs' example prints
    assert printed[-3] == f"succeeded {job.fine_tuned_model}"
    assert printed[-2].startswith("The final answer is")  # the fine-tuned model's own answer
    assert any(line.startswith("Stopping early (evalstop): ") for line in printed)
    rlguard_jobs = platform["server"].client(platform["key"]).jobs()["data"]
    assert [j["status"] for j in rlguard_jobs if j["job_kind"] == "rlhf"] == ["early_stopped"]


def test_the_fine_tuned_model_is_listed_and_deletable(platform):
    client, job = platform["client"], platform["job"]
    assert job.fine_tuned_model in [m.id for m in client.models.list()]
    assert client.models.retrieve(job.fine_tuned_model).owned_by == "acme"
    assert client.models.delete(job.fine_tuned_model).deleted
    assert job.fine_tuned_model not in [m.id for m in client.models.list()]
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve(job.fine_tuned_model)


@pytest.mark.parametrize("method", ["supervised", "dpo"])
def test_supervised_and_dpo_jobs_succeed_with_their_final_model(platform, method: str):
    client, job = platform["client"], platform["offline"][method]
    assert job.status == "succeeded", job.error
    assert job.fine_tuned_model == f"ft:toy:acme:{method}:{job.id.removeprefix('ftjob-')}"
    [checkpoint] = client.fine_tuning.jobs.checkpoints.list(job.id).data
    assert checkpoint.step_number == 3  # 1 epoch of 18 examples, 6 a batch
    assert checkpoint.fine_tuned_model_checkpoint == f"{job.fine_tuned_model}:ckpt-step-3"
    assert job.fine_tuned_model in [m.id for m in client.models.list()]


def unstopped_job(client: openai.OpenAI, file_id: str, grader: dict[str, Any], **hp: int):  # type: ignore[no-untyped-def]
    """A reinforcement job on the toy model, 8 new tokens a sample, evals every 3 steps, no
    stop rule."""
    return client.fine_tuning.jobs.create(
        model="toy",
        training_file=file_id,
        method={
            "type": "reinforcement",
            "reinforcement": {"grader": grader, "hyperparameters": {**hp, "eval_interval": 3}},
        },
        extra_body={"rlguard": {"max_new_tokens": 8, "stop_policy": {"rule": "none"}}},
    )


def test_a_job_pauses_resumes_and_cancels(platform):
    client = platform["client"]
    rows = [sum_row(a, b) for a in range(3) for b in range(3)]
    upload = client.files.create(file=jsonl("all.jsonl", rows * 8), purpose="fine-tune")
    grader = {
        "type": "string_check",
        "name": "right",
        "input": "{{sample.output_text}}",
        "reference": "is {{item.answer}}.",
        "operation": "like",
    }
    job = unstopped_job(client, upload.id, grader, n_epochs=50, batch_size=8)
    wait(client, job.id, until=("running",))
    deadline = time.monotonic() + 120
    while not client.fine_tuning.jobs.checkpoints.list(job.id).data:  # its first eval's model
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert client.fine_tuning.jobs.pause(job.id).status in ("running", "paused")  # stopping
    assert wait(client, job.id, until=("paused",)).status == "paused"
    with pytest.raises(openai.ConflictError):
        client.fine_tuning.jobs.pause(job.id)
    assert client.fine_tuning.jobs.resume(job.id).status == "queued"
    wait(client, job.id, until=("running",))
    assert client.fine_tuning.jobs.cancel(job.id).status in ("running", "cancelled")
    cancelled = wait(client, job.id)
    assert cancelled.status == "cancelled" and cancelled.fine_tuned_model is None
    messages = [e.message for e in client.fine_tuning.jobs.list_events(job.id, limit=1000)]
    assert "Fine-tuning job starting (attempt 2)" in messages  # a second run, after the pause


def test_a_score_model_grader_scores_inside_the_job(platform):
    """The toy base model as its own grader: asked a sum, it answers "The final answer is N.",
    and the first number of its answer (0..4) is the score, so the rewards are its own."""
    client = platform["client"]
    rows = [sum_row(a, b) for a in range(3) for b in range(3)]
    upload = client.files.create(file=jsonl("scored.jsonl", rows), purpose="fine-tune")
    judge = {
        "type": "score_model",
        "name": "judge",
        "model": "toy",
        "input": [{"role": "user", "content": "What is {{item.answer}} + 0? "}],
        "range": [0, 10],
        "sampling_params": {"temperature": 0, "max_completions_tokens": 8},
    }
    grader = {
        "type": "multi",
        "name": "scored",
        "graders": {"judge": judge},
        "calculate_output": "judge / 10",
    }
    job = unstopped_job(client, upload.id, grader, n_epochs=1, batch_size=3)
    done = wait(client, job.id)
    assert done.status == "succeeded", done.error
    events = client.fine_tuning.jobs.list_events(job.id, limit=1000).data
    metrics = [e.data for e in events if e.type == "metrics"]
    judged = [m["sub_graders"]["judge"]["valid_mean_reward"] for m in metrics]
    assert judged and all(0 < j <= 10 for j in judged)  # the model's own numbers, not errors
    assert all(
        m["full_valid_mean_reward"] == pytest.approx(j / 10)
        for m, j in zip(metrics, judged, strict=True)
    )


def test_a_finished_jobs_answers_conform_to_openais_published_schema(platform):
    client, job = platform["client"], platform["offline"]["supervised"]
    jobs, path = client.fine_tuning.jobs.with_raw_response, "/fine_tuning/jobs/{fine_tuning_job_id}"
    rft = platform["job"].id
    checked(jobs.retrieve, path, "get", fine_tuning_job_id=rft)
    events = checked(jobs.list_events, path + "/events", "get", fine_tuning_job_id=rft, limit=1000)
    assert {e.type for e in events.data} == {"message", "metrics"}
    listed = client.fine_tuning.jobs.checkpoints.with_raw_response.list
    checked(listed, path + "/checkpoints", "get", fine_tuning_job_id=rft)
    models = client.models.with_raw_response
    assert job.fine_tuned_model in [m.id for m in checked(models.list, "/models", "get").data]
    checked(models.retrieve, "/models/{model}", "get", model=job.fine_tuned_model)
    checked(models.delete, "/models/{model}", "delete", model=job.fine_tuned_model)
