"""Metric watchers: CPU per 1,000 records read (TensorBoard, JSONL) and the latency from a
record written to the watcher's report. Writes benchmarks/results/watchers.json.

    python benchmarks/bench_watchers.py [--steps 5000] [--evals 40] [--polls 0.1,0.5]

CPU: a job logs `--steps` steps of 6 scalars each (eval every 10 steps; proxy, KL, loss and two
tags nobody watches every step), in 50 appends; the watcher polls after each append and the CPU
time (process_time) of the polls alone is divided by the records in the file. Latency: a writer
thread writes one eval at a random moment (uniform in 0-2 poll intervals apart), flushes it, and
the watcher polling every `poll_s` in its own thread reports it; latency is the report's time
minus the flush's. Both include the poll interval by design: it is what a stop rule waits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from rlguard.io import write_json
from rlguard.platform.watchers import Watcher, WatchSpec

RESULTS = Path(__file__).parent / "results"
TAGS = ("train/reward", "train/kl", "train/loss", "perf/throughput", "perf/mfu")


def spec(source: str, poll_s: float = 1.0) -> WatchSpec:
    fields = {"tensorboard": {"path": "tb"}, "jsonl": {"path": "metrics.jsonl"}}[source]
    return WatchSpec(
        source=source,
        eval_tag="eval/score",
        proxy_tag="train/reward",
        kl_tag="train/kl",
        loss_tag="train/loss",
        total_steps=100_000,
        poll_s=poll_s,
        **fields,
    )


class Log:
    """A job's logger: TensorBoard (torch's SummaryWriter, as the frameworks use) or JSONL."""

    def __init__(self, source: str, job: Path) -> None:
        self.source = source
        if source == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(job / "tb"), max_queue=1_000_000, flush_secs=3600)
        else:
            self.file = open(job / "metrics.jsonl", "a")  # noqa: SIM115

    def write(self, step: int, metrics: dict[str, float]) -> None:
        if self.source == "tensorboard":
            for tag, value in metrics.items():
                self.writer.add_scalar(tag, value, step)
        else:
            self.file.write(json.dumps({"step": step, **metrics}) + "\n")

    def flush(self) -> None:
        (self.writer if self.source == "tensorboard" else self.file).flush()


def cpu_per_1000(source: str, steps: int, appends: int = 50) -> dict:
    with tempfile.TemporaryDirectory() as job:
        log, reports = Log(source, Path(job)), []
        watcher = Watcher(spec(source), job, lambda **r: reports.append(r))
        records, cpu = 0, 0.0
        for chunk in range(appends):
            for step in range(chunk * steps // appends, (chunk + 1) * steps // appends):
                metrics = {tag: random.random() for tag in TAGS}
                if step % 10 == 0:
                    metrics["eval/score"] = random.random()
                log.write(step, metrics)
                records += len(metrics)
            log.flush()
            began = time.process_time()
            watcher.poll()
            cpu += time.process_time() - began
        return {
            "records": records,
            "points_watched": watcher.events_read,
            "evals_reported": len(reports),
            "polls": appends,
            "cpu_s": round(cpu, 4),
            "cpu_s_per_1000_records": round(cpu / records * 1000, 5),
        }


def latency(source: str, poll_s: float, evals: int) -> dict:
    with tempfile.TemporaryDirectory() as job:
        log, written, reported = Log(source, Path(job)), {}, {}
        done = threading.Event()

        def on_eval(step: int, **_r) -> None:
            reported[step] = time.monotonic()

        watcher = Watcher(spec(source, poll_s), job, on_eval)
        thread = threading.Thread(target=watcher.run, args=(done.is_set,))
        thread.start()
        rng = random.Random(0)
        for step in range(1, evals + 1):
            time.sleep(rng.uniform(0, 2 * poll_s))
            log.write(step, {"train/reward": 0.5, "eval/score": rng.random()})
            log.flush()
            written[step] = time.monotonic()
        time.sleep(2 * poll_s)
        done.set()
        thread.join()
        ms = sorted((reported[s] - written[s]) * 1000 for s in written if s in reported)
        return {
            "poll_s": poll_s,
            "evals": evals,
            "reported": len(ms),
            "latency_ms": {
                "p50": round(statistics.median(ms), 1),
                "p95": round(ms[int(0.95 * (len(ms) - 1))], 1),
                "max": round(ms[-1], 1),
                "mean": round(statistics.fmean(ms), 1),
            },
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--evals", type=int, default=40)
    parser.add_argument("--polls", default="0.1,0.5")
    parser.add_argument("--out", type=Path, default=RESULTS / "watchers.json")
    args = parser.parse_args()
    random.seed(0)
    polls = [float(p) for p in args.polls.split(",")]
    result = {
        "command": "python benchmarks/bench_watchers.py "
        f"--steps {args.steps} --evals {args.evals} --polls {args.polls}",
        "cpu": {source: cpu_per_1000(source, args.steps) for source in ("tensorboard", "jsonl")},
        "latency": {
            source: [latency(source, poll_s, args.evals) for poll_s in polls]
            for source in ("tensorboard", "jsonl")
        },
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
