"""What shipping a job costs: a tenant's code and its Python environment, on a real sandboxed
`rlguard serve` on loopback.

- A 50 MB working directory (250 source-like text files and 25 MB of random data): packing it
  (the client), uploading it (`POST /v1/working_dirs`: the server reads it through and stores
  it), and laying it out in a job's directory (what each attempt's node does).
- A job's environment: resolving its requirements (at submission), building it on the node
  cold, and finding it cached, from the job's own events and its log.
- A job's start-up (submission to its process running, and to its end) without requirements,
  with its environment cold, and with it cached: `--repeats` of each, interleaved, and medians.

The requirements come from PyPI by default (a small, common set); `--find-links DIR` builds from
a directory of wheels instead (offline). Writes JSON; asserts nothing.

    python benchmarks/bench_job_shipping.py --out benchmarks/results/job_shipping.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform as host
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from rlguard.io import write_json
from rlguard.platform import workdir
from rlguard.platform.client import Client
from rlguard.platform.local import start_server
from rlguard.platform.volume import unmount
from rlguard.ports import unused_port

MB = 1_000_000
REQUIREMENTS = ["requests==2.32.3", "rich==13.9.4", "pyyaml==6.0.2"]
TQDM = ["4.67.1", "4.67.0", "4.66.6", "4.66.5", "4.66.4"]
"""One tqdm version per cold build: each set is a new environment, the rest the same."""
PROBE = "python -c 'import requests, rich, tqdm, yaml'"


def code_tree(root: Path, total_mb: int) -> Path:
    """Half text a compressor squeezes (source files), half random bytes (data it does not)."""
    root.mkdir(parents=True)
    line = "def step(batch):\n    return sum(x * x for x in batch)  # a source line\n"
    text_files = 250
    per_file = total_mb * MB // 2 // text_files
    for i in range(text_files):
        package = root / f"pkg{i // 50}"
        package.mkdir(exist_ok=True)
        (package / f"mod{i}.py").write_text((line * (per_file // len(line) + 1))[:per_file])
    (root / "data").mkdir()
    for i in range(5):
        (root / "data" / f"shard{i}.bin").write_bytes(os.urandom(total_mb * MB // 2 // 5))
    (root / "train.py").write_text("print('ok')\n")
    return root


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn(*args)
    return value, round(time.perf_counter() - start, 3)


def ship_code(client: Client, tree: Path, scratch: Path) -> dict:
    archive, pack_s = timed(workdir.pack, tree)
    uploaded, upload_s = timed(client.working_dir, archive)
    job_dir = scratch / "job"
    job_dir.mkdir()
    written, lay_out_s = timed(workdir.lay_out, io.BytesIO(archive), job_dir, None)
    return {
        "tree_bytes": sum(p.stat().st_size for p in tree.rglob("*") if p.is_file()),
        "zip_bytes": len(archive),
        "files": uploaded["files"],
        "pack_s": pack_s,
        "upload_s": upload_s,
        "lay_out_s": lay_out_s,
        "laid_out_bytes": written,
    }


def start_up(client: Client, body: dict) -> dict:
    """Submission to the job's process running (its `running` state event) and to its end."""
    submitted = time.time()
    job = client.submit(body)
    answered = time.time()
    done = client.wait(job["id"], timeout_s=1800, poll_s=0.05)
    ended = time.time()
    events = client.all_events(job["id"])
    running = next(
        (e for e in events if e["type"] == "state" and e["data"]["status"] == "running"), None
    )
    environment = next((e["data"] for e in events if e["type"] == "environment"), {})
    return {
        "status": done["status"],
        "submit_answer_s": round(answered - submitted, 3),
        "resolve_s": environment.get("seconds"),
        "packages": len(environment.get("packages", [])),
        "to_running_s": None if running is None else round(running["created_at"] - submitted, 3),
        "to_end_seen_s": round(ended - submitted, 3),
        "running_reason": None if running is None else running["data"]["reason"],
    }


def _medians(runs: list[dict]) -> dict:
    keys = ("submit_answer_s", "resolve_s", "to_running_s", "to_end_seen_s")
    return {
        k: float(np.median([r[k] for r in runs])) if runs[0][k] is not None else None for k in keys
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/job_shipping.json"))
    parser.add_argument("--code-mb", type=int, default=50)
    parser.add_argument("--find-links", help="build from this directory of wheels (offline)")
    parser.add_argument("--repeats", type=int, default=3, choices=range(1, len(TQDM) + 1))
    args = parser.parse_args()
    index = ["--package-index", "none", "--find-links", args.find_links] if args.find_links else []
    with tempfile.TemporaryDirectory(prefix="rlguard-bench-ship-") as tmp:
        scratch = Path(tmp)
        data = scratch / "data"
        port = unused_port()
        server = start_server(data, port, ["--gpus", "2", *index])
        try:
            tenant = [sys.executable, "-m", "rlguard.cli", "tenants", "create", "bench"]
            made = subprocess.run(
                [*tenant, "--quota-gpus", "2", "--data-dir", str(data), "--json"],
                check=True,
                capture_output=True,
            )
            client = Client(f"http://127.0.0.1:{port}", json.loads(made.stdout)["api_key"])
            code = ship_code(client, code_tree(scratch / "code", args.code_mb), scratch)
            jobs: dict[str, list[dict]] = {"without_requirements": [], "cold": [], "cached": []}
            for version in TQDM[: args.repeats]:  # interleaved: drift hits each kind alike
                requirements = [*REQUIREMENTS, f"tqdm=={version}"]
                body = {"command": PROBE, "requirements": requirements}
                jobs["without_requirements"].append(start_up(client, {"command": "true"}))
                jobs["cold"].append(start_up(client, body))
                jobs["cached"].append(start_up(client, body))
        finally:
            server.terminate()
            server.wait(timeout=120)
            unmount(data)
    result = {
        "host": {
            "machine": host.machine(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "index": args.find_links or "PyPI",
        "requirements": REQUIREMENTS,
        "working_dir": code,
        "jobs": jobs,
        "median": {kind: _medians(runs) for kind, runs in jobs.items()},
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
