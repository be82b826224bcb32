"""The operator's base models: `--model NAME=PATH` checked in one line, and `/v1/models` as the
official `openai` SDK reads it (list, retrieve, as OpenAI's OpenAPI description has them; an
unknown model a 404 in OpenAI's words)."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from in_process import http_server, in_process_platform
from openapi_schema import checked

from rlguard.errors import InputError
from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.deposits import Deposits
from rlguard.platform.finetune.base_models import check_unique, parse_model
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.job_writes import JobWrites
from rlguard.platform.reports import Reports
from rlguard.platform.tenants import create_tenant


def hf_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    path.chmod(0o755)
    return path


def test_a_model_is_a_name_and_a_hugging_face_directory(tmp_path: Path) -> None:
    model = parse_model(f"tiny-llama={hf_dir(tmp_path / 'tiny')}")
    assert (model.name, model.path) == ("tiny-llama", str((tmp_path / "tiny").resolve()))
    assert model.as_mount().tenant is None  # in every tenant's job view


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("tiny", "expected NAME=PATH"),
        ("ft:tiny=/x", "expected NAME=PATH"),
        ("tiny=relative/dir", "PATH must be absolute"),
        ("tiny=/no/such/dir", "no such directory"),
        ("tiny=/tmp", "holds no config.json"),
    ],
)
def test_a_bad_model_is_one_line_naming_it(raw: str, said: str) -> None:
    with pytest.raises(InputError, match=f"option --model: '{raw}': .*{said}"):
        parse_model(raw)


def test_a_name_registered_twice_is_refused(tmp_path: Path) -> None:
    a = parse_model(f"m={hf_dir(tmp_path / 'a')}")
    b = parse_model(f"m={hf_dir(tmp_path / 'b')}")
    with pytest.raises(InputError, match="'m' is registered twice"):
        check_unique([a, b])


def test_the_sdk_lists_and_retrieves_the_base_models(tmp_path: Path) -> None:
    registered = [parse_model(f"{n}={hf_dir(tmp_path / n)}") for n in ("tiny-b", "tiny-a")]
    with in_process_platform(tmp_path) as platform:
        platform.models = check_unique(registered)
        ingest = EvalIngest(Reports(platform, JobWrites()))
        deposits = Deposits(platform, ArtifactStore(str(tmp_path / "artifacts")))
        _, key = create_tenant(platform.store, "acme", 1)
        with http_server(create_app(platform, ingest, deposits)) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)
            raw = client.models.with_raw_response
            listed = checked(raw.list, "/models", "get")
            assert [m.id for m in listed.data] == ["tiny-a", "tiny-b"]
            model = checked(raw.retrieve, "/models/{model}", "get", model="tiny-a")
            assert isinstance(model, openai.types.Model) and model.owned_by == "rlguard"
            with pytest.raises(openai.NotFoundError, match="The model 'gpt-4o' does not exist"):
                client.models.retrieve("gpt-4o")
