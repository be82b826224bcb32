"""The platform in process, served on loopback, with the official `openai` SDK as its client:
how the tests of OpenAI's surface talk to it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import openai
from in_process import http_server, in_process_platform

from rlguard.platform.api import create_app
from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.deposits import Deposits
from rlguard.platform.finetune.base_models import RegisteredModel
from rlguard.platform.ingest import EvalIngest
from rlguard.platform.job_writes import JobWrites
from rlguard.platform.jobenv import Software
from rlguard.platform.reports import Reports
from rlguard.platform.service import Platform
from rlguard.platform.tenants import create_tenant


@contextmanager
def served(
    tmp_path: Path, file_mb: int = 512, models: Sequence[RegisteredModel] = ()
) -> Iterator[tuple[openai.OpenAI, openai.OpenAI]]:
    """Two tenants' SDK clients against one in-process platform served on loopback, with the
    operator's base `models`."""
    with served_platform(tmp_path, file_mb, models) as (_, a, b):
        yield a, b


@contextmanager
def served_platform(
    tmp_path: Path, file_mb: int = 512, models: Sequence[RegisteredModel] = ()
) -> Iterator[tuple[Platform, openai.OpenAI, openai.OpenAI]]:
    """`served`, with the platform behind it, for a test that sets its store as a finished job
    would have left it."""
    with in_process_platform(tmp_path) as platform:
        platform.software = Software(file_mb=file_mb)
        platform.models = {m.name: m for m in models}
        platform.store_uri = str(tmp_path / "artifacts")
        platform.artifacts = ArtifactStore(platform.store_uri)
        ingest = EvalIngest(Reports(platform, JobWrites()))
        deposits = Deposits(platform, platform.artifacts)
        keys = [create_tenant(platform.store, name, 1)[1] for name in ("acme", "beta")]
        with http_server(create_app(platform, ingest, deposits)) as url:
            a, b = (openai.OpenAI(base_url=f"{url}/v1", api_key=k, max_retries=0) for k in keys)
            yield platform, a, b
