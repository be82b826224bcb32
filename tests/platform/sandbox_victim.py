"""Tenant A's job in the attack battery: writes its weights and a secret, keeps a secret in its
/tmp, reports an eval (so its token is in use), then waits until the test releases it (a file
`release` the test writes into its directory) and checks that nothing of its own changed."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from rlguard.platform.client import JobReporter


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    here = Path(os.environ["RLGUARD_OUTPUT_DIR"]).parent
    files = {"weights.bin": os.urandom(1 << 20), "secret.txt": b"victim-secret-4711\n"}
    for name, data in files.items():
        (here / name).write_bytes(data)
    Path("/tmp/victim-tmp-secret").write_text("victim tmp secret")
    before = {name: digest(here / name) for name in files}
    print("victim log secret: log-secret-0815", flush=True)
    reporter = JobReporter.from_env()
    assert reporter is not None
    reporter.eval(step=1, score=0.5, progress=0.5)
    (here / "ready").write_text("ready")
    deadline = time.monotonic() + 600
    while not (here / "release").exists():
        if time.monotonic() > deadline:
            sys.exit("never released")
        time.sleep(0.2)
    after = {name: digest(here / name) for name in files}
    tmp_intact = Path("/tmp/victim-tmp-secret").read_text() == "victim tmp secret"
    planted = Path("/tmp/attacker-was-here").exists()  # what the attacker wrote to its /tmp
    verdict = {"files_intact": before == after, "tmp_intact": tmp_intact, "tmp_planted": planted}
    (here / "verdict.json").write_text(json.dumps(verdict))
    reporter.eval(step=2, score=0.6, progress=1.0)


if __name__ == "__main__":
    main()
