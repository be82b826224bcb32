"""A command job for the platform's tests: reports a given eval curve through the job client.

Usage: python curve_job.py SCORES_CSV [SECONDS_PER_EVAL [hacked]]. With `hacked`, each eval
also reports a proxy reward that keeps rising and a KL that grows with it. It keeps its step in
$RLGUARD_OUTPUT_DIR/step (a checkpoint), resumes from it, reports each eval (the weights of an
eval are "saved" as a file named after its step), exits 0 when the platform says stop, and on
SIGTERM saves its step and exits 143 (preempted: resume me).
"""

import os
import signal
import sys
import time
from pathlib import Path

from rlguard.platform.client import JobReporter

scores = [float(s) for s in sys.argv[1].split(",")]
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
hacked = sys.argv[3:] == ["hacked"]
out = Path(os.environ["RLGUARD_OUTPUT_DIR"])
state = out / "step"
terminated = False


def on_term(signum, frame):
    global terminated
    terminated = True


signal.signal(signal.SIGTERM, on_term)
reporter = JobReporter.from_env()
step = int(state.read_text()) if state.is_file() else 0
print(f"attempt {os.environ['RLGUARD_ATTEMPT']} from step {step}", flush=True)
while step < len(scores):
    time.sleep(pause)
    step += 1
    weights = out / f"weights-{step}"
    weights.write_text(str(scores[step - 1]))
    answer = reporter.eval(
        step,
        scores[step - 1],
        step / len(scores),
        loss=1.0 / step,
        proxy=0.2 * step if hacked else None,
        kl=0.05 * step**1.5 if hacked else None,
        checkpoint=str(weights),
    )
    state.write_text(str(step))
    if answer["action"] == "stop":
        print(f"stopped at step {step}: {answer['reason']}", flush=True)
        sys.exit(0)
    if terminated:
        print(f"preempted at step {step}", flush=True)
        sys.exit(143)
print("done", flush=True)
