"""The runtime simulator: both paper setups over 5 seeds (the numbers docs/runtime.md reports),
lower bounds from the decode physics, the simulator's own wall time, and one-assumption-at-a-time
sensitivities (3 seeds each). Writes JSON; asserts nothing.

    python benchmarks/bench_runtime_sim.py --out benchmarks/results/runtime_sim.json
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from rlguard.io import write_json
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile, load_profile
from rlguard.runtime.sim.decode import generation_floor_s
from rlguard.runtime.sim.experiment import measured_batches, run_setup
from rlguard.runtime.sim.roofline import SHIPPED, Assumptions, derive_profile
from rlguard.runtime.sim.setups import SETUPS, Setup


def headline(payload: dict[str, Any]) -> dict[str, Any]:
    base, lean = payload["baseline"], payload["serverless"]
    return {
        "speedup": payload["speedup"],
        "cost_cut": payload["cost_cut"],
        "cost_cut_usd": payload["cost_cut_usd"],
        "rollout_share_baseline": base["phases"]["generation"] / base["step_s"],
        "baseline_phases": base["phases"],
        "serverless_phases": lean["phases"],
        "ablation": {
            name: {"speedup": e["speedup"], "cost_cut": e["cost_cut"]}
            for name, e in payload["ablation"].items()
        },
    }


def bounds(setup: Setup, profile: TimeProfile, payload: dict[str, Any]) -> dict[str, float]:
    """What no runtime with the same decode physics can beat: generation no shorter than its
    slowest sequence alone, so a stage-by-stage step gains at most step / (step - generation +
    floor), and one that hides all of scoring behind generation (overlap) at most step / (floor +
    training); and a stage-by-stage runtime saves no more GPU-seconds than the baseline's idle
    generation GPU-seconds. Beside them, the step the serverless executor's own generation work
    allows once no GPU idles before training: (its generation GPU-seconds + scoring
    GPU-seconds) / GPUs + training, which overlap can reach but not beat."""
    floors = [
        generation_floor_s(b, profile)
        for seed in payload["config"]["seeds"]
        for b in measured_batches(setup, seed)
    ]
    base, lean = payload["baseline"], payload["serverless"]
    floor = float(np.mean(floors))
    step, generation = base["step_s"], base["phases"]["generation"]
    scoring_gpu_s = base["phases"]["scoring"] * setup.n_gpus
    lean_generation_gpu_s = lean["actor_busy_s"] * profile.gpus_per_actor
    return {
        "generation_floor_s": floor,
        "speedup_bound": step / (step - generation + floor),
        "speedup_bound_overlap": step / (floor + base["phases"]["training"]),
        "idle_gpu_s_share": base["actor_idle_s"] * profile.gpus_per_actor / base["gpu_s"],
        "serverless_work_step_s": (lean_generation_gpu_s + scoring_gpu_s) / setup.n_gpus
        + base["phases"]["training"],
    }


def with_workload(setup: Setup, **change: Any) -> Setup:
    return setup.model_copy(update={"workload": setup.workload.model_copy(update=change)})


def derived(setup: Setup, **assume: Any) -> TimeProfile:
    """The setup's shipped profile derived again with some assumptions changed."""
    model, gpu = SHIPPED[setup.profile]
    return derive_profile(setup.profile, model, gpu, Assumptions(**assume))[0]


def sensitivities(
    setup: Setup, profile: TimeProfile
) -> list[tuple[str, Setup, TimeProfile, Prices]]:
    """One assumption changed at a time (and the most favourable combination to RLHFless)."""
    half_decode = {"bandwidth_efficiency": 0.375, "decode_mfu": 0.25}
    capped = {"response_median": 600.0, "capped_fraction": 0.15}
    favourable = dataclasses.replace(derived(setup, **half_decode), cold_start_s=5.0)
    return [
        ("decode at half the roofline speed", setup, derived(setup, **half_decode), Prices()),
        (
            "verl's default gpu_memory_utilization 0.5",
            setup,
            derived(setup, gpu_memory_utilization=0.5),
            Prices(),
        ),
        (
            "cold start 5 s (warm container, fast loader)",
            setup,
            dataclasses.replace(profile, cold_start_s=5.0),
            Prices(),
        ),
        ("cold starts not billed", setup, profile, Prices(bill_cold_start=False)),
        (
            "reasoning-length responses (median 800)",
            with_workload(setup, response_median=800.0),
            profile,
            Prices(),
        ),
        (
            "15% of responses at the cap (median 600)",
            with_workload(setup, **capped),
            profile,
            Prices(),
        ),
        ("no within-prompt correlation", with_workload(setup, prompt_share=0.0), profile, Prices()),
        ("tau 0.97", setup.model_copy(update={"tau": 0.97}), profile, Prices()),
        ("lam 1 (fastest)", setup.model_copy(update={"lam": 1.0}), profile, Prices()),
        ("PPO", setup.model_copy(update={"algorithm": "ppo"}), profile, Prices()),
        (
            "half-speed decode + cold start 5 s + 15% at the cap",
            with_workload(setup, **capped),
            favourable,
            Prices(),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/runtime_sim.json"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sensitivity-seeds", type=int, default=3)
    args = parser.parse_args()
    seeds, few = list(range(args.seeds)), list(range(args.sensitivity_seeds))
    report: dict[str, Any] = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "seeds": seeds,
        "sensitivity_seeds": few,
        "setups": {},
        "sensitivity": {},
    }
    for name, setup in SETUPS.items():
        profile = load_profile(setup.profile)
        started = time.perf_counter()
        payload = run_setup(setup, profile, Prices(), seeds)
        wall = time.perf_counter() - started
        report["setups"][name] = {
            "command": f"rlguard runtime simulate --setup {name} --seeds {args.seeds} --json",
            "simulator_wall_s": round(wall, 3),
            "wall_s_per_seed": round(wall / len(seeds), 3),
            **headline(payload),
            **bounds(setup, profile, payload),
            "result": payload,
        }
        rows = []
        for label, changed, prof, prices in sensitivities(setup, profile):
            result = run_setup(changed, prof, prices, few)
            rows.append({"change": label, **headline(result), **bounds(changed, prof, result)})
        report["sensitivity"][name] = rows
    write_json(args.out, report)
    for name, entry in report["setups"].items():
        keys = (
            "simulator_wall_s",
            "speedup",
            "cost_cut",
            "speedup_bound",
            "speedup_bound_overlap",
            "serverless_work_step_s",
            "rollout_share_baseline",
        )
        print(name, {k: round(entry[k], 3) for k in keys})
        for row in report["sensitivity"][name]:
            print(
                f"  {row['change']:55s} {row['speedup']:.3f} {row['cost_cut']:+.3f} "
                f"share {row['rollout_share_baseline']:.2f} bound {row['speedup_bound']:.3f}"
                f"/{row['speedup_bound_overlap']:.3f}",
                *(
                    f"{name} {row['ablation'][name]['speedup']:.3f} "
                    f"{row['ablation'][name]['cost_cut']:+.3f}"
                    for name in ("no-migrate", "no-overlap")
                ),
            )


if __name__ == "__main__":
    main()
