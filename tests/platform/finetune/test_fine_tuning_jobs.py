"""OpenAI's `/v1/fine_tuning/jobs` as the official `openai` SDK uses it, against the app on
loopback (no Ray: jobs are created and queued, not run; tests/platform/finetune/
test_fine_tuning_live.py runs them): each method's job with its `auto` hyperparameters
resolved, list with its filters and pages, cancel, events; bad input a 400 naming the field
with nothing created; another tenant's job answers exactly as a missing one."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml
from openai.types.fine_tuning import FineTuningJob, FineTuningJobEvent
from openapi_schema import checked
from sdk_server import served, served_platform

from rlguard.platform.finetune.base_models import parse_model
from rlguard.platform.jobenv import Software
from sums_grader import RIGHT, SUMS_GRADER

USER = {"role": "user", "content": "What is 2 + 2? "}
CHAT = {"messages": [USER, {"role": "assistant", "content": "The final answer is 4."}]}
PROMPT = {"messages": [USER], "answer": "4"}
PREFERENCE = {
    "input": {"messages": [USER]},
    "preferred_output": [{"role": "assistant", "content": "The final answer is 4."}],
    "non_preferred_output": [{"role": "assistant", "content": "The final answer is 5."}],
}


def jsonl(*records: dict) -> tuple[str, bytes]:
    return ("data.jsonl", "".join(json.dumps(r) + "\n" for r in records).encode())


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("ftjobs")
    model = root / "tiny"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with served(root, models=[parse_model(f"tiny={model}")]) as (a, b):
        files = {
            name: a.files.create(file=jsonl(*rows), purpose="fine-tune").id
            for name, rows in {
                "chat": [CHAT] * 40,
                "prompts": [PROMPT] * 40,
                "preference": [PREFERENCE] * 10,
                "ends_with_assistant": [PROMPT, CHAT],
                "no_answer": [{"messages": [USER]}],
            }.items()
        }
        yield a, b, files, root / "artifacts"


def reinforcement(grader: dict[str, Any] = SUMS_GRADER, **hyperparameters: Any) -> dict[str, Any]:
    return {
        "type": "reinforcement",
        "reinforcement": {"grader": grader, "hyperparameters": hyperparameters},
    }


def test_a_reinforcement_job_is_created_with_its_auto_hyperparameters_resolved(clients) -> None:
    a, _, files, _ = clients
    job = a.fine_tuning.jobs.create(
        model="tiny",
        training_file=files["prompts"],
        validation_file=files["prompts"],
        method=reinforcement(eval_interval=5),
        suffix="sums",
        seed=7,
        metadata={"team": "math"},
    )
    assert isinstance(job, FineTuningJob)
    assert (job.model, job.status, job.seed, job.fine_tuned_model) == ("tiny", "queued", 7, None)
    assert job.hyperparameters.n_epochs == 1 and job.hyperparameters.batch_size == 1  # 40 rows
    settings = job.method.reinforcement
    assert (
        settings.hyperparameters.eval_interval == 5 and settings.hyperparameters.eval_samples == 1
    )
    assert settings.grader.type == "multi" and job.user_provided_suffix == "sums"
    assert job.metadata == {"team": "math"}
    assert a.fine_tuning.jobs.retrieve(job.id) == job
    events = a.fine_tuning.jobs.list_events(job.id).data
    assert all(isinstance(e, FineTuningJobEvent) for e in events)
    assert [e.message for e in events] == ["Fine-tuning job queued", "Validating training file"]


def test_a_multigraders_sub_graders_become_cgpos_constraints(clients) -> None:
    a, _, files, store = clients
    cgpo = {"constraints": {"right": 1.0}, "optimizer": "crraft"}
    job = a.fine_tuning.jobs.create(
        model="tiny",
        training_file=files["prompts"],
        method=reinforcement(),
        extra_body={"rlguard": {"cgpo": cgpo}},
    )
    assert job.status == "queued"
    [task] = stage_config_of(a, store)["tasks"]
    assert task["optimizer"] == "crraft" and task["reward"]["options"] == {"grader": "grader.json"}
    assert task["judges"] == [
        {"name": "grader", "grader": "grader.json", "sub_grader": "right", "pass_threshold": 1.0}
    ]
    assert {name: spec["options"] for name, spec in task["scores"].items()} == {
        sub: {"grader": "grader.json", "sub_grader": sub} for sub in ("right", "form")
    }  # each sub-grader's score, logged


def stage_config_of(client: openai.OpenAI, store: Path, name: str = "ft.yaml") -> Any:
    """The `rlguard train` config (or another file) in the working directory of the newest job."""
    job = client.get("/jobs", cast_to=dict, options={"params": {"limit": 1}})["data"][0]
    sha = job["working_dir"].removeprefix("sha256:")
    with zipfile.ZipFile(store / job["tenant"] / "working_dirs" / f"{sha}.zip") as packed:
        return yaml.safe_load(packed.read(name))


SCORED = {
    "type": "score_model",
    "name": "judge",
    "model": "tiny",
    "input": [{"role": "user", "content": "Is {{sample.output_text}} right for {{item.answer}}?"}],
}


def test_a_score_model_sub_grader_scores_with_a_base_model_the_job_is_shown(clients) -> None:
    a, _, files, store = clients
    grader = {**SUMS_GRADER, "graders": {**SUMS_GRADER["graders"], "judge": SCORED}}
    a.fine_tuning.jobs.create(
        model="tiny", training_file=files["prompts"], method=reinforcement(grader)
    )
    shown = stage_config_of(a, store, "grader.json")  # reward.load_grader's file
    assert shown["grader"]["graders"]["judge"]["model"] == "tiny"
    assert shown["models"] == {"tiny": str(store.parent / "tiny")}


def test_supervised_and_dpo_jobs_take_their_own_files(clients) -> None:
    a, _, files, _ = clients
    sft = a.fine_tuning.jobs.create(
        model="tiny", training_file=files["chat"], hyperparameters={"n_epochs": 2}
    )
    assert sft.method.type == "supervised" and sft.hyperparameters.n_epochs == 2
    dpo = a.fine_tuning.jobs.create(
        model="tiny",
        training_file=files["preference"],
        method={"type": "dpo", "dpo": {"hyperparameters": {"beta": 0.2}}},
    )
    assert dpo.method.dpo.hyperparameters.beta == 0.2 and dpo.hyperparameters.n_epochs == 3


def test_list_pages_newest_first_and_filters_by_metadata(clients) -> None:
    a, _, files, _ = clients
    made = [
        a.fine_tuning.jobs.create(
            model="tiny", training_file=files["chat"], metadata={"batch": "pages", "i": str(i)}
        )
        for i in range(3)
    ]
    tagged = a.fine_tuning.jobs.list(extra_query={"metadata[batch]": "pages"})
    assert [j.id for j in tagged.data] == [j.id for j in made[::-1]]
    first = a.fine_tuning.jobs.list(limit=1, extra_query={"metadata[batch]": "pages"})
    assert [j.id for j in first.data] == [made[2].id] and first.has_more
    rest = a.fine_tuning.jobs.list(after=made[2].id, extra_query={"metadata[batch]": "pages"})
    assert [j.id for j in rest.data] == [made[1].id, made[0].id] and not rest.has_more
    one = a.fine_tuning.jobs.list(extra_query={"metadata[i]": "1", "metadata[batch]": "pages"})
    assert [j.id for j in one.data] == [made[1].id]


def test_cancel_ends_a_queued_job_and_a_second_cancel_is_a_409(clients) -> None:
    a, _, files, _ = clients
    job = a.fine_tuning.jobs.create(model="tiny", training_file=files["chat"])
    assert a.fine_tuning.jobs.cancel(job.id).status == "cancelled"
    with pytest.raises(openai.ConflictError, match="has already ended"):
        a.fine_tuning.jobs.cancel(job.id)
    messages = [e.message for e in a.fine_tuning.jobs.list_events(job.id)]
    assert messages[0] == "The job was cancelled (cancelled by the user)"


def test_another_tenants_job_answers_as_a_missing_one(clients) -> None:
    a, b, files, _ = clients
    job = a.fine_tuning.jobs.create(model="tiny", training_file=files["chat"])
    for call in (
        lambda i: b.fine_tuning.jobs.retrieve(i),
        lambda i: b.fine_tuning.jobs.cancel(i),
        lambda i: b.fine_tuning.jobs.list_events(i),
        lambda i: b.fine_tuning.jobs.checkpoints.list(i),
    ):
        for job_id in (job.id, "ftjob-missing"):
            with pytest.raises(
                openai.NotFoundError, match=f"Could not find fine-tuning job {job_id}"
            ):
                call(job_id)
    assert [j.id for j in b.fine_tuning.jobs.list()] == []
    with pytest.raises(openai.NotFoundError) as refused:  # b cannot train on a's file
        b.fine_tuning.jobs.create(model="tiny", training_file=files["chat"])
    assert refused.value.body["param"] == "training_file"


BAD = [
    ({"model": "gpt-4o-mini"}, "model", "does not exist or is not available"),
    ({"training_file": "preference"}, "training_file", "a supervised job needs chat examples"),
    (
        {"training_file": "chat", "method": {"type": "dpo"}},
        "training_file",
        "a dpo job needs preference examples",
    ),
    (
        {"training_file": "ends_with_assistant", "method": reinforcement()},
        "training_file",
        "line 2: messages: a reinforcement example ends with the user's turn (got 'assistant'",
    ),
    (
        {"training_file": "prompts", "method": {"type": "reinforcement"}},
        "method.reinforcement.grader",
        "needs a grader",
    ),
    (
        {"training_file": "no_answer", "method": reinforcement()},
        "method.reinforcement.grader.graders.right.reference",
        "item.answer",
    ),
    (
        {"training_file": "prompts", "method": reinforcement({**RIGHT, "type": "regex"})},
        "method.reinforcement.grader.type",
        "unknown grader type",
    ),
    (
        {"training_file": "prompts", "method": reinforcement({**RIGHT, "operation": "glob"})},
        "method.reinforcement.grader.operation",
        "glob",
    ),
    (
        {
            "training_file": "prompts",
            "method": reinforcement({**SUMS_GRADER, "calculate_output": "import os"}),
        },
        "method.reinforcement.grader.calculate_output",
        "",
    ),
    (
        {
            "training_file": "prompts",
            "method": reinforcement(
                {
                    "type": "python",
                    "name": "p",
                    "source": "def grade(s, i):\n    raise KeyError('x')",
                }
            ),
        },
        "method.reinforcement.grader.source",
        "KeyError",
    ),
    (
        {"training_file": "prompts", "method": reinforcement({**SCORED, "model": "ft:tiny:x:y:z"})},
        "method.reinforcement.grader.model",
        "a fine-tuned model cannot score inside a job",
    ),
    (
        {
            "training_file": "prompts",
            "method": reinforcement(
                {**SCORED, "input": [{"role": "user", "content": "{{item.x}}"}]}
            ),
        },
        "method.reinforcement.grader.input.0",
        "item.x",
    ),
    (
        {"training_file": "prompts", "method": reinforcement(n_epochs=0)},
        "method.reinforcement.hyperparameters.n_epochs",
        "within 1..50",
    ),
    (
        {"hyperparameters": {"beta": 0.1}},
        "method.supervised.hyperparameters.beta",
        "only for dpo jobs",
    ),
    ({"integrations": [{"type": "wandb", "wandb": {}}]}, "integrations", "not supported"),
    ({"extra_body": {"rlguard": {"gpus": 99}}}, "rlguard.gpus", "exceeds"),
    ({"extra_body": {"rlguard": {"priority": 1}}}, "rlguard.priority", "unknown field"),
    (
        {
            "training_file": "prompts",
            "method": reinforcement(RIGHT),
            "extra_body": {"rlguard": {"cgpo": {"constraints": {"right": 1}}}},
        },
        "rlguard.cgpo",
        "whose grader is a multi",
    ),
    (
        {
            "training_file": "prompts",
            "method": reinforcement(),
            "extra_body": {"rlguard": {"cgpo": {"constraints": {"style": 1}}}},
        },
        "rlguard.cgpo.constraints.style",
        "no sub-grader 'style'",
    ),
    (
        {
            "training_file": "prompts",
            "method": reinforcement(),
            "extra_body": {"rlguard": {"cgpo": {"constraints": {"right": 1}, "optimizer": "sgd"}}},
        },
        "rlguard.cgpo.optimizer",
        "one of crpg, crraft, codpo",
    ),
]


@pytest.mark.parametrize(("change", "param", "said"), BAD)
def test_bad_input_is_a_400_naming_the_field_and_creates_nothing(
    clients, change: dict[str, Any], param: str, said: str
) -> None:
    a, _, files, _ = clients
    before = [j.id for j in a.fine_tuning.jobs.list(limit=100)]
    request = {"model": "tiny", "training_file": files["chat"], **change}
    if request["training_file"] in files:
        request["training_file"] = files[request["training_file"]]
    with pytest.raises(openai.BadRequestError) as refused:
        a.fine_tuning.jobs.create(**request)
    error = refused.value.body
    assert error["param"] == param and said in error["message"], error
    assert [j.id for j in a.fine_tuning.jobs.list(limit=100)] == before


def test_every_answer_conforms_to_openais_published_schema(clients) -> None:
    a, _, files, _ = clients
    jobs = a.fine_tuning.jobs.with_raw_response
    job = checked(
        lambda: jobs.create(
            model="tiny",
            training_file=files["prompts"],
            method=reinforcement(),
            metadata={"k": "v"},
        ),
        "/fine_tuning/jobs",
        "post",
    )
    path = "/fine_tuning/jobs/{fine_tuning_job_id}"
    checked(jobs.retrieve, path, "get", fine_tuning_job_id=job.id)
    checked(jobs.list, "/fine_tuning/jobs", "get", limit=2)
    checked(jobs.list_events, path + "/events", "get", fine_tuning_job_id=job.id)
    checked(
        a.fine_tuning.jobs.checkpoints.with_raw_response.list,
        path + "/checkpoints",
        "get",
        fine_tuning_job_id=job.id,
    )
    checked(jobs.pause, path + "/pause", "post", fine_tuning_job_id=job.id)
    checked(jobs.resume, path + "/resume", "post", fine_tuning_job_id=job.id)
    checked(jobs.cancel, path + "/cancel", "post", fine_tuning_job_id=job.id)


def test_files_past_the_working_directory_cap_are_a_413_and_create_nothing(tmp_path: Path) -> None:
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with served_platform(tmp_path, models=[parse_model(f"tiny={model}")]) as (platform, a, _):
        platform.software = Software(working_dir_mb=1)
        big = a.files.create(file=jsonl(*[CHAT] * 12_000), purpose="fine-tune")  # ~1.2 MB
        with pytest.raises(openai.APIStatusError) as refused:
            a.fine_tuning.jobs.create(model="tiny", training_file=big.id)
        assert refused.value.status_code == 413
        assert refused.value.body["param"] == "training_file"
        assert "over 1 MiB" in refused.value.body["message"]
        assert a.fine_tuning.jobs.list().data == []


def test_a_base_model_is_not_deleted_and_an_unknown_one_is_missing(clients) -> None:
    a, _, _, _ = clients
    with pytest.raises(openai.PermissionDeniedError, match="is a base model"):
        a.models.delete("tiny")
    with pytest.raises(openai.NotFoundError, match="The model 'ft:tiny:acme::nope' does not"):
        a.models.delete("ft:tiny:acme::nope")
    assert [m.id for m in a.models.list()] == ["tiny"]  # no job of this module has finished
