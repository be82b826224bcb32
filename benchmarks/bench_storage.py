"""The artifact store's cost: a 1 GB checkpoint up and down, and what uploading it adds to a stop.

1. Upload (the job-side uploader, as a run's Ray actor calls it: read, sha256, write, then the
   manifest) and download (the server's streamed read, hashed as the CLI does) of a 1 GiB
   checkpoint (4 shards of 256 MiB, random bytes) to a local directory and to moto's S3 server.
2. A preemption's cost: a real `rlguard serve` (sandboxed where the host can) with the store, a
   command job that saved its checkpoint before it is stopped and reports it on SIGTERM (as a
   trainer reports what it saved), then exits 143. Time from the stop request to the checkpoint
   being recorded, 1 GiB against 1 KiB: the difference is what the upload adds.

Usage: python benchmarks/bench_storage.py --out benchmarks/results/storage.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))

from live_platform import LiveServer, free_port
from s3_server import S3Server

from rlguard.platform.artifacts import ArtifactStore
from rlguard.platform.uploader import upload_checkpoint

MiB = 1 << 20
SHARDS, SHARD_MIB = 4, 256

STOPPED_JOB = """
import os, signal, sys, time
from pathlib import Path
from rlguard.platform.client import JobReporter
left = int(sys.argv[1])
ckpt = Path(os.environ["RLGUARD_OUTPUT_DIR"]) / "checkpoint"
ckpt.mkdir(exist_ok=True)
with open(ckpt / "model.bin", "wb") as f:
    while left:
        f.write(os.urandom(min(left, 1 << 20)))
        left -= min(left, 1 << 20)
(ckpt.parent / "saved").write_text("1")
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(time.time()))
while not stop:
    time.sleep(0.01)
JobReporter.from_env().checkpoint(1, str(ckpt))
sys.exit(143)
"""


def write_checkpoint(directory: Path) -> int:
    directory.mkdir(parents=True)
    chunk = os.urandom(MiB)
    for shard in range(SHARDS):
        with open(directory / f"model-{shard:05d}.safetensors", "wb") as f:
            for i in range(SHARD_MIB):
                f.write(chunk[i % 7 :] + chunk[: i % 7])  # no two MiB alike
    return SHARDS * SHARD_MIB * MiB


def transfer(uri: str, job_dir: Path, size: int) -> dict[str, float]:
    store = ArtifactStore(uri)
    key = store.new_checkpoint_key("bench", "job", 1)
    start = time.perf_counter()
    manifest = upload_checkpoint(uri, str(job_dir), "ckpt", key, 1)
    up = time.perf_counter() - start
    start = time.perf_counter()
    for entry in manifest["files"]:
        digest = hashlib.sha256()
        for chunk in store.read(key, entry["name"]):
            digest.update(chunk)
        assert digest.hexdigest() == entry["sha256"]
    down = time.perf_counter() - start
    store.remove(store.job_key("bench", "job"))
    return {
        "upload_s": round(up, 2),
        "upload_mb_s": round(size / MiB / up, 1),
        "download_s": round(down, 2),
        "download_mb_s": round(size / MiB / down, 1),
    }


def stop_to_recorded(data_dir: Path, storage: str, size: int) -> float:
    """Seconds from a cancel (SIGTERM) to the job's checkpoint being recorded."""
    server = LiveServer(data_dir, free_port(), None, ["--storage", storage, "--grace-s", "600"])
    data_dir.mkdir(parents=True)
    server.start()
    try:
        _, key = server.tenant("bench", quota_gpus=1)
        client = server.client(key)
        command = f"{sys.executable} -c {shlex.quote(STOPPED_JOB)} {size}"
        job = client.submit({"command": command, "gpus": 1})
        saved = data_dir / "jobs" / job["id"] / "output" / "saved"
        while not saved.exists():
            time.sleep(0.05)
        stopped = time.time()
        client.cancel(job["id"])
        client.wait(job["id"], timeout_s=900, poll_s=0.2)
        recorded = next(e for e in client.all_events(job["id"]) if e["type"] == "checkpoint")
        return recorded["created_at"] - stopped
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/storage.json"))
    args = parser.parse_args()
    s3 = S3Server().start()
    results: dict[str, object] = {
        "host": f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}",
        "checkpoint": f"{SHARDS} files of {SHARD_MIB} MiB (1 GiB)",
        "s3_server": "moto[server] on loopback (objects held in its memory)",
        "load_average_1m_at_start": round(os.getloadavg()[0], 1),  # a shared host is noisy
    }
    try:
        with s3.environment(), tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
            root = Path(tmp)
            size = write_checkpoint(root / "job" / "ckpt")
            stores = {"local": str(root / "store"), "s3": f"{s3.uri}/bench"}
            for name, uri in stores.items():
                results[f"transfer_{name}"] = transfer(uri, root / "job", size)
                print(name, results[f"transfer_{name}"], flush=True)
            for name, uri in stores.items():
                times = {}
                for label, nbytes in (("1KiB", 1024), ("1GiB", size)):
                    times[label] = stop_to_recorded(root / f"p-{name}-{label}", uri, nbytes)
                results[f"preemption_{name}"] = {
                    "stop_to_recorded_1kib_s": round(times["1KiB"], 2),
                    "stop_to_recorded_1gib_s": round(times["1GiB"], 2),
                    "added_by_1gib_s": round(times["1GiB"] - times["1KiB"], 2),
                }
                print(name, results[f"preemption_{name}"], flush=True)
    finally:
        s3.stop()
    results["load_average_1m_at_end"] = round(os.getloadavg()[0], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
