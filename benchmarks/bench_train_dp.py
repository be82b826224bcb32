"""Data-parallel training speed: one CGPO (CRPG) step at 1 and 2 processes, beside TRL's
GRPOTrainer under the same `accelerate launch`, on this machine's CPUs (gloo).

Each process count is one `accelerate launch` of this script in worker mode; in it, as in
bench_train.py (whose systems and settings this reuses), TRL's steps and ours run interleaved:
each TRL step, then one step of ours. The global batch is the same at every process count
(B prompts x K samples, split over the processes; every completion exactly --max-new-tokens
long), so tokens/s at N processes over tokens/s at 1 is the data-parallel speed-up. Step times
are the main process's (the processes meet at every step); tokens are summed over processes.
Writes JSON; asserts nothing.

    python benchmarks/bench_train_dp.py --out benchmarks/results/train_dp.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import warnings
from pathlib import Path

import torch

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from bench_train import Interleave, ours, summary, trl_trainer  # noqa: E402

from rlguard.cli.train import launch  # noqa: E402
from rlguard.io import write_json  # noqa: E402
from rlguard.train import toy  # noqa: E402

SYSTEMS = ("ours_cgpo_crpg", "trl_grpo")


def worker(args: argparse.Namespace) -> None:
    """One process of a launch: time both systems, write this process's times and tokens."""
    import transformers

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    processes, rank = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))
    trainer = ours("crpg", args.root, args)
    interleave = Interleave({"ours_cgpo_crpg": trainer})
    trl, trl_tokens = trl_trainer(args.root, args, interleave, processes)
    trl.train()
    record = {
        "times": interleave.times,
        "tokens": {"ours_cgpo_crpg": trainer.rollout.tokens, "trl_grpo": trl_tokens},
        "baseline_s": interleave.baseline_s["ours_cgpo_crpg"],
    }
    write_json(args.record / f"{processes}-{rank}.json", record)


def run(processes: int, args: argparse.Namespace, root: Path, records: Path) -> dict:
    """Launch `processes` workers; both systems' step times and whole-batch tokens/s."""
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k != "processes"]
    program = [__file__, "--worker", f"--root={root}", f"--record={records}", *flags]
    if launch(processes, program) != 0:
        raise SystemExit(f"the {processes}-process launch failed")
    ranks = [json.loads((records / f"{processes}-{r}.json").read_text()) for r in range(processes)]
    result = {}
    for name in SYSTEMS:
        tokens = [sum(step) for step in zip(*(r["tokens"][name] for r in ranks), strict=True)]
        result[name] = summary(ranks[0]["times"][name], tokens, args.warmup)
    result["trl_step_s_over_ours"] = round(
        result["trl_grpo"]["step_s_median"] / result["ours_cgpo_crpg"]["step_s_median"], 3
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/train_dp.json"))
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per system")
    parser.add_argument("--warmup", type=int, default=2, help="untimed first steps")
    parser.add_argument("--k", type=int, default=4, help="samples per prompt")
    parser.add_argument("--batch", type=int, default=8, help="prompts per step (all processes)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--beta", type=float, default=0.04, help="KL coefficient (TRL)")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "worker", "root", "record")}
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bench-train-dp-") as tmp:
        root, records = Path(tmp) / "world", Path(tmp) / "records"
        records.mkdir()
        toy.build(root, seed=0, hidden_size=args.hidden, layers=args.layers)
        loads = []
        for processes in args.processes:
            loads.append(os.getloadavg()[0])
            runs[str(processes)] = run(processes, argparse.Namespace(**settings), root, records)
    one = runs.get("1")
    for result in runs.values():
        for name in SYSTEMS:
            if one is not None:
                speedup = result[name]["tokens_per_s"] / one[name]["tokens_per_s"]
                result[name]["tokens_per_s_over_1_process"] = round(speedup, 3)
    report = {
        "machine": platform.platform(),
        "cpu_count": os.cpu_count(),
        "load_average_1min_at_each_launch": [round(x, 2) for x in loads],
        "versions": {"torch": torch.__version__},
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in settings.items()},
        "runs_by_processes": runs,
    }
    write_json(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
