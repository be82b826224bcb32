"""A plain TRL GRPOTrainer job on the lab's world, watched and stopped by the live platform.

Issue 25's acceptance on the lab's own learned proxy and gold (docs/watchers.md, "On the lab's
world"): `benchmarks/trl_lab_grpo_job.py` (no rlguard in its training loop, TensorBoard written by
TRL itself) submitted as a command with the `trl` watch preset to a real sandboxed `rlguard serve`,
the world mounted read-only. Each proxy seed trains on the world's reward model (it hacks); each
honest seed trains on the gold score. Every job's stop policy is patience (`--patience` evals
without a new best gold eval, no warm-up): at this learning rate the hack is a fall from the first
evals and then a plateau, which EvalStop's consecutive declines miss (docs/watchers.md).

Per job: its end, the gold evals the platform recorded, its decision, the checkpoint delivered
and whether a fresh rule replaying the recorded evals decides as the platform did. Writes JSON;
asserts nothing. About 10 minutes per pair of jobs on 2 cores, plus the world's build if WORLD
does not hold it yet.

    python benchmarks/bench_trl_lab_platform.py --world runs/quick-world \
        --out benchmarks/results/trl_lab_platform.json
"""

from __future__ import annotations

import argparse
import json
import platform as host
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "platform"))
from live_platform import LiveServer, free_port

from rlguard.io import write_json
from rlguard.lab.experiment import quick_config
from rlguard.lab.world import build_world
from rlguard.platform.local import open_to_jobs
from rlguard.platform.replay import replay_decisions

JOB = Path(__file__).with_name("trl_lab_grpo_job.py")
WATCH = {
    "preset": "trl",
    "eval_tag": "eval/rewards/gold/mean",
    "proxy_tag": "train/rewards/final/mean",  # the world's reward model, named by its directory
    "poll_s": 1.0,
}
ONE_THREAD = {"OMP_NUM_THREADS": "1"}
RESULTS = Path(__file__).parent / "results"


def summary(client, job_id: str) -> dict:
    job = client.job(job_id)
    events = client.all_events(job_id)
    decisions = client.decisions(job_id)["data"]
    live = {d["event_seq"]: (d["stop"], d["reason"]) for d in decisions}
    delivered = [e["data"] for e in events if e["type"] == "checkpoint" and "rule" in e["data"]]
    return {
        "id": job_id,
        "status": job["status"],
        "stop_reason": job["stop_reason"],
        "error": job["error"],
        "evals": [
            {k: e["data"][k] for k in ("step", "score", "proxy", "progress")}
            for e in events
            if e["type"] == "eval"
        ],
        "delivered": delivered[0] if delivered else None,
        "reasons": [d["reason"] for d in decisions if d["reason"]],
        "replay_agrees": replay_decisions(job, events) == live,
        "started_at": job["started_at"],
        "finished_at": job["finished_at"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--world", type=Path, required=True, help="built, or built here")
    parser.add_argument("--proxy-seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--honest-seeds", type=int, nargs="*", default=[0, 1])
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--side-by-side", type=int, default=2, help="virtual GPUs: jobs at once")
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/trl_lab_platform.json")
    )
    args = parser.parse_args()
    world = build_world(args.world, quick_config().world, progress=True)
    open_to_jobs(world.root)
    data = Path(tempfile.mkdtemp(prefix="rlguard-bench-trl-lab-"))
    mounts = ["--mount", f"world={world.root.resolve()}:ro"]
    mounts += ["--mount", f"bench={JOB.parent.resolve()}:ro"]
    gpus = ["--gpus", str(args.side_by_side), "--grace-s", "60"]
    server = LiveServer(data, free_port(), None, [*gpus, *mounts]).start()
    try:
        _, key = server.tenant("lab", quota_gpus=args.side_by_side)
        client = server.client(key)
        policy = {"rule": "patience", "patience": args.patience}
        runs = [("proxy", s) for s in args.proxy_seeds] + [("honest", s) for s in args.honest_seeds]
        submitted = []
        for reward, seed in runs:
            honest = " honest" if reward == "honest" else ""
            command = f"{sys.executable} {JOB} {world.root.resolve()}{honest} seed={seed}"
            body = {"command": command, "watch": WATCH, "env": ONE_THREAD, "stop_policy": policy}
            submitted.append((reward, seed, client.submit(body)["id"]))
        rows = []
        for reward, seed, job_id in submitted:
            client.wait(job_id, timeout_s=7200)
            rows.append({"reward": reward, "seed": seed, **summary(client, job_id)})
    finally:
        server.stop()
    if all(row["status"] != "failed" for row in rows):
        shutil.rmtree(data, ignore_errors=True)
    else:
        print(f"a job failed: its log is under {data / 'jobs'}", file=sys.stderr)
    result = {
        "host": {"machine": host.machine(), "python": host.python_version()},
        "world": str(args.world),
        "stop_policy": policy,
        "runs": rows,
    }
    write_json(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
