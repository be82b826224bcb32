"""A command job for the quotes test: reports three training steps' timers (verl's names), then
three evals with checkpoints, the third after a pause that puts its pace past a small budget.

Usage: python budget_job.py PAUSE_S. Prints the platform's stop answer and exits 0 when told to
stop, as a trainer obeying its eval's answer does.
"""

import os
import sys
import time
from pathlib import Path

from rlguard.platform.client import JobReporter

pause_s = float(sys.argv[1])
out = Path(os.environ["RLGUARD_OUTPUT_DIR"])
reporter = JobReporter.from_env()
for step, (gen_s, update_s) in enumerate([(40.0, 7.0), (30.0, 6.0), (28.0, 6.4)], start=1):
    timers = {"gen_s": gen_s, "old_log_prob_s": 1.5, "ref_s": 0.5, "update_actor_s": update_s}
    lengths = {"prompt_length_mean": 104.0, "response_length_mean": 320.0}
    reporter.step(step, **timers, **lengths, step_s=gen_s + update_s + 2.0)
for step, score, progress, pause in [
    (1, 0.7, 0.5, 0.0),
    (2, 0.6, 0.6, 0.0),
    (3, 0.65, 0.65, pause_s),
]:
    time.sleep(pause)
    checkpoint = out / f"ckpt-{step}"
    checkpoint.mkdir()
    (checkpoint / "weights.bin").write_bytes(os.urandom(1000))
    answer = reporter.eval(step, score, progress, checkpoint=str(checkpoint))
    if answer["action"] == "stop":
        print("stopped:", answer["reason"], flush=True)
        sys.exit(0)
print("never stopped", flush=True)
