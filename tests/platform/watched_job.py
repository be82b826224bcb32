"""A command job that does not speak rlguard: it logs evals to metrics.jsonl in its directory
and saves `ckpt-{step}/` directories, as a framework's file logger would; only a watcher can
see it. No rlguard import.

Usage: python watched_job.py SCORES_CSV PAUSE_S SAVE_EVERY [odd ...], where `odd` writes what
a watch must warn about and survive: a NaN eval, a text eval, a restart whose steps go back, and
a link planted towards LINK_TARGET (an environment variable) with evals a watcher must not read.
Each eval is logged PAUSE_S after the last; steps are 10, 20, ...; a checkpoint is saved before
the eval of every SAVE_EVERY-th step. Each record holds the time it was written (for
benchmarks/bench_watched_jobs.py).
"""

import json
import os
import sys
import time
from pathlib import Path

scores = [float(s) for s in sys.argv[1].split(",")]
pause, save_every = float(sys.argv[2]), int(sys.argv[3])
odd = "odd" in sys.argv[4:]
log = Path("metrics.jsonl")


def write(record: dict) -> None:
    with log.open("a") as f:
        f.write(json.dumps(record) + "\n")


if odd:
    Path("planted.jsonl").symlink_to(os.environ["LINK_TARGET"])
for i, score in enumerate(scores, start=1):
    time.sleep(pause)
    step = 10 * i
    if i % save_every == 0:
        Path(f"ckpt-{step}").mkdir()  # with weights: the store refuses an empty checkpoint
        Path(f"ckpt-{step}/weights.bin").write_bytes(step.to_bytes(4, "little"))
    write({"step": step, "reward": 0.1 * i, "eval_score": score, "time": time.time()})
    if odd and i == 2:
        write({"step": step + 1, "eval_score": float("nan")})  # json.dumps writes NaN
        write({"step": step + 2, "eval_score": "high"})
        write({"step": 5, "eval_score": 0.0})  # a restarted attempt goes back
print(f"logged {len(scores)} evals", flush=True)
