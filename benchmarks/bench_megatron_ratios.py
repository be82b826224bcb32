"""Ratio checks of the calibrated step model against verl's Megatron and FSDP runs on H100 in
github.com/ISEEKYAN/verl_megatron_practice (dapo7b.csv: Qwen2.5-Math-7B DAPO, 512 prompts a step,
32 a mini-batch, responses up to 8k; runtime/data/megatron_practice.csv). The table logs no
lengths, so no step is simulated: each pair shares its workload, and the model predicts the
second run's time from the first's measured one. Scoring and training are tokens x (per-token
cost) / GPUs + fixed costs (calib/coefficients.py); the tokens cancel:

    t_b = (t_a - fixed_a) x (cost_b / GPUs_b) / (cost_a / GPUs_a) + fixed_b

Per-token cost: compute at the calibrated 1 / MFU, plus Megatron's TP all-reduces or the FSDP
gathers its token budget per micro-batch cannot hide (runtime/calib/comm.py), plus the calibrated
overhead per micro-batch and layer, a micro-batch being one token budget (dynamic batch size) on
each of a TP group's GPUs. Not modelled: Ulysses
sequence parallel (the FSDP rows), traffic between nodes (16 and 32 GPUs are 2 and 4 nodes),
rope fusion. Generation is left out: its time depends on the lengths. Asserts nothing.

    python benchmarks/bench_megatron_ratios.py --out benchmarks/results/megatron_ratios.json
"""

from __future__ import annotations

import argparse
import csv
from importlib.resources import files
from pathlib import Path
from typing import Any

from rlguard.io import write_json
from rlguard.runtime.calib.coefficients import compute_s_per_flop, load_coefficients
from rlguard.runtime.calib.comm import (
    fsdp_exposed_s_per_token,
    optimizer_sync_s,
    tensor_parallel_s_per_token,
)
from rlguard.runtime.sim.hardware import H100, QWEN25_7B

DATA = files("rlguard.runtime") / "data" / "megatron_practice.csv"
MINI_BATCHES = 512 // 32  # optimizer steps a step: 512 prompts, 32 a mini-batch
# (what changes, the row measured first, the row predicted from it)
PAIRS = [
    ("8 -> 16 GPUs, Megatron TP4", 7, 8),
    ("8 -> 32 GPUs, Megatron TP4", 7, 9),
    ("8 -> 16 GPUs, Megatron TP4, no rope fusion", 5, 6),
    ("8 -> 32 GPUs, FSDP + Ulysses SP4", 14, 15),
    ("FSDP -> Megatron TP4, 8 GPUs, no rope fusion", 14, 5),
    ("FSDP -> Megatron TP4, 32 GPUs", 15, 9),
    ("Megatron TP4 -> TP2, 8 GPUs", 7, 16),
]
PHASES = {"scoring": "old_logp_s", "training": "update_actor_s"}


def per_token_s(row: dict[str, str], train: bool) -> float:
    """GPU-seconds a token of one log-prob pass or one update on this row's layout."""
    c, model, gpu = load_coefficients(), QWEN25_7B, H100
    flops = (6 if train else 2) * model.params
    at_peak, per_pflop = (
        (c.train, c.train_s_per_pflop) if train else (c.forward, c.forward_s_per_pflop)
    )
    compute = compute_s_per_flop(at_peak, per_pflop, gpu) * flops
    budget = float(row["actor_max_tokens_per_gpu" if train else "logp_max_tokens_per_gpu"])
    tp = int(row["tp"]) if row["backend"] == "megatron" else 1
    overhead = c.train_micro_s_per_layer if train else c.micro_s_per_layer
    micro = overhead * model.layers * tp / budget  # a micro-batch-layer's share of a token
    if row["backend"] == "megatron":
        return compute + micro + tensor_parallel_s_per_token(model, gpu, tp, train)
    n = int(row["n_gpus"])
    return compute + micro + fsdp_exposed_s_per_token(model, gpu, n, budget, compute, train, False)


def fixed_s(row: dict[str, str], train: bool) -> float:
    """The model's seconds a step that do not grow with tokens: Megatron's optimizer sync (the
    rows state no offload, verl's default being none, so no offload costs)."""
    if not train or row["backend"] != "megatron":
        return 0.0
    tp = int(row["tp"])
    return MINI_BATCHES * optimizer_sync_s(QWEN25_7B, H100, tp, 1, int(row["n_gpus"]) // tp)


def predict(a: dict[str, str], b: dict[str, str], phase: str) -> float:
    train = phase == "training"
    rate_a = per_token_s(a, train) / int(a["n_gpus"])
    rate_b = per_token_s(b, train) / int(b["n_gpus"])
    measured_a = float(a[PHASES[phase]])
    return (measured_a - fixed_s(a, train)) * rate_b / rate_a + fixed_s(b, train)


def checks(rows: dict[int, dict[str, str]]) -> list[dict[str, Any]]:
    out = []
    for what, first, second in PAIRS:
        a, b = rows[first], rows[second]
        for phase, column in PHASES.items():
            measured = float(b[column]) / float(a[column])
            model = predict(a, b, phase) / float(a[column])
            out.append(
                {
                    "change": what,
                    "rows": [first, second],
                    "phase": phase,
                    "measured_ratio": round(measured, 3),
                    "model_ratio": round(model, 3),
                    "model_error": round(model / measured - 1, 3),
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/megatron_ratios.json"))
    args = parser.parse_args()
    rows = {int(r["number"]): r for r in csv.DictReader(DATA.read_text("utf-8").splitlines())}
    payload = {
        "command": "python benchmarks/bench_megatron_ratios.py",
        "data": "runtime/data/megatron_practice.csv",
        "checks": checks(rows),
    }
    write_json(args.out, payload)
    print(args.out)


if __name__ == "__main__":
    main()
