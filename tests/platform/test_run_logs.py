"""A run's log and train config on a node with a root of its own, and its log through the API
from wherever it is (runlogs.py), without Ray: the run's actor (JobProcess) keeps both under the
node's root, not at the server's data directory's path; when the job's process exits, the log's
last 4 MiB (from a whole line) go to the store beside the job's checkpoints; the server reads a
live run's log from its actor, then its own disk, then the store."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import yaml

from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.executor import JobProcess
from rlguard.platform.jobhome import ROOT_ENV, JobHome, remove_job_files
from rlguard.platform.runlogs import LOG_MAX_BYTES, as_text, log_key, read_log

LINES = 100_000  # "line 000000 xxx...x" and a newline: 63 bytes each, 6.3 MB: past the bound
PRINTER = f"for i in range({LINES}): print(f'line {{i:06d}} ' + 'x' * 50)"


def _run(tmp_path: Path, monkeypatch, argv: list[str], config: dict | None = None):
    data, root = tmp_path / "data", tmp_path / "scratch"
    monkeypatch.setenv(ROOT_ENV, str(root))
    store = ArtifactStore(f"file://{tmp_path / 'store'}")
    home = JobHome(
        "job-1",
        str(data / "jobs"),
        config=config,
        config_path=str(data / "configs" / "job-1.yaml"),
        store_uri=store.uri,
        log_key=log_key("ten", "job-1", 1),
    )
    run = JobProcess(argv, {}, home, str(data / "logs" / "job-1" / "attempt-1.log"))
    run.started()
    return run, store, data, root


def test_a_runs_log_stays_on_its_node_and_its_tail_goes_to_the_store(tmp_path, monkeypatch):
    run, store, data, root = _run(tmp_path, monkeypatch, ["python3", "-c", PRINTER])
    assert run.wait().code == 0
    on_node = root / ".rlguard" / "logs" / "job-1" / "attempt-1.log"
    assert on_node.stat().st_size == LINES * 63 and not data.exists()
    assert (root.stat().st_mode & 0o777) == 0o700

    kept = store.get(log_key("ten", "job-1", 1), 10 * LOG_MAX_BYTES)
    assert 0 < len(kept) <= LOG_MAX_BYTES
    lines = kept.decode().splitlines()
    assert lines[-1] == f"line {LINES - 1:06d} " + "x" * 50  # its end, from a whole line
    assert all(line.startswith("line ") and len(line) == 62 for line in lines)
    assert run.log_tail(1000) == kept[-(1000 // 63) * 63 :]  # the actor's tail: whole lines

    # The server, which shares no disk with the node: the actor while it lives, then the store.
    platform = SimpleNamespace(
        active={"job-1": SimpleNamespace(attempt=1, handle=SimpleNamespace(running=True))},
        executor=SimpleNamespace(log_tail=lambda handle, n: run.log_tail(n)),
        log_path=lambda job, attempt: data / "logs" / job / f"attempt-{attempt}.log",
        artifacts=store,
    )
    assert read_log(platform, "ten", "job-1", 1).splitlines()[-1] == lines[-1]
    with open(on_node, "a") as more:  # what only the actor has: it answered, not the store
        more.write("written after the end\n")
    assert read_log(platform, "ten", "job-1", 1).endswith("written after the end\n")
    platform.active = {}  # the run ended: its actor is gone
    assert read_log(platform, "ten", "job-1", 1) == kept.decode()
    assert read_log(platform, "ten", "job-1", 2) == ""  # an attempt nothing holds

    # Deleting the job takes the node's copies (the store's go with the job's prefix).
    removed = remove_job_files("job-1", str(data / "jobs"))["removed"]
    assert str(on_node.parent) in removed and not on_node.exists()


def test_binary_output_is_served_within_the_cap_from_a_whole_line():
    """4 MiB of bytes that are not UTF-8 would be 12 MiB of U+FFFD: the text stays within the
    cap, ends as the log ends and starts on a whole line."""
    binary = (b"\xff" * 1000 + b"\n") * (LOG_MAX_BYTES // 1001) + b"the last line\n"
    text = as_text(binary)
    assert len(text.encode()) <= LOG_MAX_BYTES < len(binary.decode(errors="replace").encode())
    assert text.endswith("the last line\n") and text.startswith("\ufffd" * 1000 + "\n")
    assert as_text(b"plain\n") == "plain\n"


def test_a_train_jobs_config_is_written_and_read_under_the_nodes_root(tmp_path, monkeypatch):
    data_config = str(tmp_path / "data" / "configs" / "job-1.yaml")
    run, _, data, root = _run(
        tmp_path, monkeypatch, ["cat", data_config], config={"steps": 3, "output_dir": "/x"}
    )
    assert run.wait().code == 0
    written = root / ".rlguard" / "configs" / "job-1.yaml"
    read = yaml.safe_load((root / ".rlguard" / "logs" / "job-1" / "attempt-1.log").read_text())
    assert read == yaml.safe_load(written.read_text())
    assert read == {"steps": 3, "output_dir": str(root / "job-1" / "output")}
    assert not data.exists()
