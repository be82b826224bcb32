"""A command job for the storage tests: a trainer that saves a checkpoint directory at each eval.

Usage: python checkpoint_job.py SCORES_CSV SECONDS_PER_EVAL BYTES_PER_CHECKPOINT [over]. Each eval
writes output/checkpoint-N/ (random weights, a config, a nested file), records the sha256 of
what it wrote in output/written-N.json, and reports the eval with that directory; at the end
it reports output/final/ as a checkpoint of its own (step len(SCORES) + 1). Before the
first eval it tries to get checkpoints outside its directory recorded (by `..`, by a planted
symlink, by an absolute path) and writes the answers to output/refused.json, and it writes the
names of its environment variables to output/env.json (the store's credentials must not be
there). With `over`, it then reports two checkpoints over the limits the storage test's server
sets (6 files; 2 MiB) and writes the answers to output/over.json.
"""

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from rlguard.platform.client import JobReporter, PlatformError

scores = [float(s) for s in sys.argv[1].split(",")]
pause, size = float(sys.argv[2]), int(sys.argv[3])
out = Path(os.environ["RLGUARD_OUTPUT_DIR"])
reporter = JobReporter.from_env()
(out / "env.json").write_text(json.dumps(sorted(os.environ)))


def reported(paths: tuple[str, ...], code: bool = False) -> dict[str, str]:
    """Each path reported as a checkpoint: "recorded", or the platform's refusal."""
    outcome = {}
    for path in paths:
        try:
            reporter.checkpoint(0, path)
            outcome[path] = "recorded"
        except PlatformError as e:
            outcome[path] = f"{e.status}{f' {e.code}' if code else ''} {e.param}: {e}"
    return outcome


(out / "planted").symlink_to("/etc")
refused = reported(("../..", "planted", "/etc/hostname", str(out / "planted" / "hostname")))
(out / "refused.json").write_text(json.dumps(refused))

if sys.argv[4:] == ["over"]:  # a "checkpoint" of more files, then more bytes, than allowed
    for i in range(6):
        (out / "many" / f"shard-{i}").parent.mkdir(exist_ok=True)
        (out / "many" / f"shard-{i}").write_bytes(b"x")
    (out / "big").mkdir()
    (out / "big" / "model.bin").write_bytes(os.urandom(2 << 20))
    over = reported(("output/many", "output/big"), code=True)
    (out / "over.json").write_text(json.dumps(over))

for step, score in enumerate(scores, start=1):
    time.sleep(pause)
    ckpt = out / f"checkpoint-{step}"
    (ckpt / "sub").mkdir(parents=True)
    files = {
        "model.bin": os.urandom(size),
        "config.json": json.dumps({"step": step}).encode(),
        "sub/optimizer.bin": os.urandom(1000),
    }
    for name, data in files.items():
        (ckpt / name).write_bytes(data)
    written = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    (out / f"written-{step}.json").write_text(json.dumps(written))
    reporter.eval(step, score, step / len(scores), checkpoint=str(ckpt))
final = out / "final"  # reported on its own, as a trainer's last save
final.mkdir()
(final / "weights.bin").write_bytes(os.urandom(size))
(out / f"written-{len(scores) + 1}.json").write_text(
    json.dumps({"weights.bin": hashlib.sha256((final / "weights.bin").read_bytes()).hexdigest()})
)
reporter.checkpoint(len(scores) + 1, "output/final", {"eval": 0.1})
print("done", flush=True)
