"""What a job's volume (volume.py) costs to start and what of its limit a job can use.

For each disk limit: the time to make the image (a sparse file, mkfs.ext4), mount it and bind
the job's directory and log (a job's first attempt), the time to attach it again (a later
attempt), the bytes a job can then write (statvfs's available bytes) as a share of the limit, and
what the image holds on the host once made. Needs root. Writes JSON; asserts nothing.

    python benchmarks/bench_job_volume.py --out benchmarks/results/job_volume.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rlguard.io import write_json
from rlguard.platform.volume import JobVolume

MiB = 1 << 20
SIZES_MB = (64, 1024, 51200)


def measure(root: Path, size_mb: int) -> dict:
    volume = JobVolume(root / "base", f"job-{size_mb}", size_mb * MiB)
    job_dir, log = root / "jobs" / volume.job_id, root / "logs" / volume.job_id / "attempt-1.log"
    started = time.perf_counter()
    volume.attach(job_dir, log)
    first = time.perf_counter() - started
    usage = volume.usage()
    volume.detach(job_dir, log)
    started = time.perf_counter()
    volume.attach(job_dir, log)
    again = time.perf_counter() - started
    on_host = volume.image.stat().st_blocks * 512
    volume.detach(job_dir, log)
    volume.remove()
    return {
        "limit_mb": size_mb,
        "first_attach_s": round(first, 4),
        "attach_again_s": round(again, 4),
        "usable_bytes": usage.free_bytes,
        "usable_share": round(usage.free_bytes / (size_mb * MiB), 4),
        "image_on_host_bytes": on_host,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlguard-volumes-") as tmp:
        rows = [measure(Path(tmp), size) for size in SIZES_MB]
    print(json.dumps(rows, indent=1))
    if opts.out:
        write_json(opts.out, {"volumes": rows})


if __name__ == "__main__":
    main()
