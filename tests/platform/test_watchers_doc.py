"""docs/watchers.md's blocks as written: the spec validates, the in-process example runs against
a real HTTP server and reports the evals it read. The submit command runs on a live platform in
test_shipped_jobs.py; the lab's blocks say why they are run by hand."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from doc_blocks import blocks
from test_watch_runner import Platform

from rlguard.platform.watchers import WatchSpec

PAGE = "watchers.md"


def test_every_block_is_run_in_the_suite_or_says_why_not() -> None:
    found = blocks(PAGE)
    ran = [(b.lang, b.text.split()[0]) for b in found if b.by_hand is None]
    assert ran == [("yaml", "watch:"), ("bash", "rlguard"), ("python", "from")]
    assert all(len(b.by_hand) > 40 for b in found if b.by_hand is not None)


def test_the_spec_block_validates() -> None:
    (spec,) = [b for b in blocks(PAGE) if b.lang == "yaml"]
    watch = WatchSpec.model_validate(yaml.safe_load(spec.text)["watch"])
    assert watch.source == "tensorboard" and watch.eval_tag == "eval/reward"


def test_the_in_process_block_runs(tmp_path: Path) -> None:
    (code,) = [b for b in blocks(PAGE) if b.lang == "python"]
    records = [{"step": s, "data": {"val-core/gsm8k/reward/mean@1": s / 100}} for s in (10, 20)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    server = Platform()
    try:
        env = server.env
        names = {
            "url": env["RLGUARD_URL"],
            "job_id": env["RLGUARD_JOB_ID"],
            "job_token": env["RLGUARD_JOB_TOKEN"],
            "job_dir": str(tmp_path),
            "job_has_ended": lambda: True,  # one poll, then the last one
        }
        exec(compile(code.text, "docs/watchers.md", "exec"), names)
    finally:
        server.shutdown()
    assert [e["step"] for e in server.sent("evals")] == [10, 20]
    assert names["delivery"] is not None
