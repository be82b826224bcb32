"""What the node-side guards of issue 24 cost, in process on real files (no Ray):

1. The upload limits' check (uploader.measure: a walk by directory descriptors, lstat, no link
   followed) on a checkpoint of 10,000 files (the default `--checkpoint-max-files`) and of 100,
   beside the upload of the same 100 files to a local store, so the check's share is plain.
2. A deleted job's files removed on a node (jobhome.remove_job_files: rmtree by descriptors) for
   a job directory of 10,000 files in 100 directories.
3. A run's log kept in the store at its end (runlogs.keep_log: its last 4 MiB) from a 275 MB
   log, and read back as `GET /logs` reads an ended run's (runlogs.read_log from the store).
Medians of 5 (each on a fresh copy where the step consumes it).

Usage: python benchmarks/bench_node_files.py --out benchmarks/results/node_files.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.jobhome import remove_job_files
from rlguard.platform.runlogs import LOG_MAX_BYTES, keep_log, log_key, read_log
from rlguard.platform.uploader import Allowance, measure, upload_checkpoint

REPEATS = 5


def _tree(root: Path, files: int, per_dir: int, size: int) -> None:
    for i in range(files):
        path = root / f"d{i // per_dir:04d}" / f"f{i:06d}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))


def _median(run) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return round(statistics.median(times), 5)


def _measure_s(directory: Path) -> float:
    def run() -> None:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            measure(fd, "ckpt", Allowance())
        finally:
            os.close(fd)

    return _median(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    out: dict[str, object] = {"host": platform.node(), "cpus": os.cpu_count(), "repeats": REPEATS}
    with tempfile.TemporaryDirectory(prefix="bench-node-files-") as tmp:
        tmp_path = Path(tmp)
        job = tmp_path / "job"
        _tree(job / "ckpt-10000", 10_000, 100, 1024)
        _tree(job / "ckpt-100", 100, 100, 1024)
        out["limits_check_10000_files_s"] = _measure_s(job / "ckpt-10000")
        out["limits_check_100_files_s"] = _measure_s(job / "ckpt-100")
        store = ArtifactStore(str(tmp_path / "store"))
        out["upload_100_files_s"] = _median(
            lambda: upload_checkpoint(
                store.uri, str(job), "ckpt-100", store.new_checkpoint_key("t", "j", 1), 1
            )
        )

        times = []
        for i in range(REPEATS):
            data = tmp_path / f"data{i}"
            _tree(data / "jobs" / "job-1", 10_000, 100, 1024)
            began = time.perf_counter()
            done = remove_job_files("job-1", str(data / "jobs"))
            times.append(time.perf_counter() - began)
            assert done["removed"] and not done["errors"]
        out["remove_job_dir_10000_files_s"] = round(statistics.median(times), 5)

        log = tmp_path / "attempt-1.log"
        line = b"x" * 99 + b"\n"
        with open(log, "wb") as f:
            for _ in range(256):
                f.write(line * (10 * 1024 + 500))  # 256 x ~1 MiB
        out["log_bytes"] = log.stat().st_size
        key = log_key("t", "job-1", 1)
        out["keep_log_s"] = _median(lambda: keep_log(store.uri, key, str(log)))
        server = SimpleNamespace(
            active={},
            log_path=lambda job_id, attempt: tmp_path / "elsewhere.log",
            artifacts=store,
        )
        out["read_ended_log_from_store_s"] = _median(lambda: read_log(server, "t", "job-1", 1))
        out["log_kept_bytes"] = len(store.get(key, 2 * LOG_MAX_BYTES) or b"")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
