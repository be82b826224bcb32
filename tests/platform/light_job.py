"""A light command job, as a cloud of them loads the platform (benchmarks/bench_platform_load.py):
an eval every 1-2 PAUSE_S seconds, no checkpoint, a curve that rises until step PEAK and falls
after it (a PEAK past EVALS: a healthy run); exits 0 at its end or when told to stop, and 143 on
SIGTERM (preempted).

Usage: python light_job.py EVALS PAUSE_S PEAK
"""

import random
import signal
import sys
import time

from rlguard.platform.client import JobReporter

evals, pause, peak = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
reporter = JobReporter.from_env()
for step in range(1, evals + 1):
    time.sleep(random.uniform(pause, 2 * pause))
    score = 0.3 + 0.01 * min(step, peak) - 0.03 * max(step - peak, 0)
    if reporter.eval(step, score, step / evals)["action"] == "stop":
        break
