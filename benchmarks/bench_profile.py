"""Measure a TimeProfile for a model on this machine and write it as a profile YAML.

The simulator's profiles are data a user measures on their own hardware. On a CPU this is the
tiny Llama the real-run benchmarks use (one torch thread); with `--device cuda` it is a
Qwen2-0.5B-shaped model (random weights, bf16) on the GPU, written as a shipped profile named
after the GPU. `cold_start_s` is the time to load the saved checkpoint from disk
(from_pretrained, and onto the GPU), the part of a function's cold start this process can see;
container and Ray actor start are not included.

`--grid JSON` also times decode steps over batch sizes x context lengths and prefill over prompt
lengths, fits the KV-cache term (`decode_s_per_context_token`, a step's time growing with the
context its batch reads) into the profile, and writes the raw grid as JSON.

    python benchmarks/bench_profile.py --out benchmarks/results/profile_tiny_llama_cpu.yaml
    python benchmarks/bench_profile.py --device cuda --grid benchmarks/results/profile_cuda.json \
        --out src/rlguard/runtime/data/profiles/qwen2-0.5b-h200-measured.yaml
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from qwen_shaped import QWEN2_0_5B, save_qwen_shaped
from scipy.optimize import nnls
from transformers import AutoModelForCausalLM, PreTrainedModel

from rlguard.io import write_json
from rlguard.runtime.generation.profiling import (
    ProfileSettings,
    decode_step_seconds,
    measure_profile,
    prefill_s_per_token,
    save_measured_profile,
)
from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama

GPU_SETTINGS = ProfileSettings(
    prompt_tokens=512,
    context_tokens=512,
    batch_sizes=(1, 8, 32, 64, 128, 256),
    decode_steps=8,
    sequence_tokens=1024,
    sequences=8,
    repeats=3,
)
CPU_SETTINGS = ProfileSettings(batch_sizes=(1, 2, 4, 8, 16, 32, 64))


def load_timed(checkpoint: Path, device: str, dtype: torch.dtype) -> tuple[PreTrainedModel, float]:
    """The saved model loaded onto `device`, and how long that took."""
    start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype).to(device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return model, time.perf_counter() - start


def grid(
    model: PreTrainedModel, settings: ProfileSettings, contexts: list[int], prompts: list[int]
) -> dict[str, Any]:
    """Decode-step seconds per (context, batch) and prefill seconds per token per prompt length."""
    decode = [
        {
            "context_tokens": context,
            "batch": batch,
            "step_s": decode_step_seconds(
                model, batch, dataclasses.replace(settings, context_tokens=context)
            ),
        }
        for context in contexts
        for batch in settings.batch_sizes
    ]
    prefill = [
        {
            "prompt_tokens": n,
            "s_per_token": prefill_s_per_token(
                model, dataclasses.replace(settings, prompt_tokens=n)
            ),
        }
        for n in prompts
    ]
    return {"decode": decode, "prefill": prefill}


def fit_context_term(decode: list[dict[str, Any]]) -> dict[str, float]:
    """step_s ~ a + b * batch + c * batch * context, all >= 0, over the whole grid."""
    batch = np.array([row["batch"] for row in decode], dtype=float)
    context = np.array([row["context_tokens"] for row in decode], dtype=float)
    seconds = np.array([row["step_s"] for row in decode])
    design = np.column_stack([np.ones_like(batch), batch, batch * context])
    (a, b, c), _ = nnls(design, seconds)
    predicted = design @ np.array([a, b, c])
    errors = np.abs(predicted - seconds) / seconds
    return {
        "decode_s_per_step": float(a),
        "decode_s_per_seq": float(b),
        "decode_s_per_context_token": float(c),
        "median_abs_error": float(statistics.median(errors)),
        "max_abs_error": float(errors.max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/profile_tiny_llama_cpu.yaml")
    )
    parser.add_argument("--device", default="cpu", help="cpu (tiny Llama) or cuda (Qwen2-0.5B)")
    parser.add_argument("--hidden", type=int, default=256, help="tiny Llama only")
    parser.add_argument("--layers", type=int, default=4, help="tiny Llama only")
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--grid", type=Path, help="also time the batch x length grid (JSON)")
    parser.add_argument("--contexts", default="256,1024,4096", help="grid: context lengths")
    parser.add_argument("--prompts", default="128,512,2048", help="grid: prompt lengths")
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    tokenizer = train_tokenizer(["the sea is calm and the sky is wide"] * 8, vocab_size=512)
    with tempfile.TemporaryDirectory() as checkpoint:
        if cuda:
            gpu = torch.cuda.get_device_name()
            save_qwen_shaped(tokenizer, Path(checkpoint))
            model, load_s = load_timed(Path(checkpoint), args.device, torch.bfloat16)
            settings, name = GPU_SETTINGS, f"qwen2-0.5b-{gpu.split()[1].lower()}-measured"
            # "NVIDIA H200" -> qwen2-0.5b-h200-measured
        else:
            torch.set_num_threads(1)
            small = tiny_llama(tokenizer, args.hidden, args.layers, max_positions=512, seed=0)
            small.save_pretrained(checkpoint)
            model, load_s = load_timed(Path(checkpoint), "cpu", torch.float32)
            settings, name = CPU_SETTINGS, f"tiny-llama-h{args.hidden}-l{args.layers}-cpu"
    profile = measure_profile(
        model, name, cold_start_s=load_s, max_batch=args.max_batch, settings=settings
    )
    derivation = {
        "cold_start_s": "from_pretrained of the saved checkpoint (and onto the device); no "
        "container or Ray start"
    }
    if args.grid:
        contexts, prompts = (
            [int(v) for v in text.split(",")] for text in (args.contexts, args.prompts)
        )
        measured = grid(model, settings, contexts, prompts)
        fit = fit_context_term(measured["decode"])
        about = {
            "device": torch.cuda.get_device_name() if cuda else "cpu",
            "model": QWEN2_0_5B if cuda else {"hidden": args.hidden, "layers": args.layers},
            "dtype": str(model.dtype),
            "settings": dataclasses.asdict(settings),
        }
        write_json(args.grid, {**about, **measured, "fit": fit})
        terms = ("decode_s_per_step", "decode_s_per_seq", "decode_s_per_context_token")
        profile = dataclasses.replace(profile, **{term: fit[term] for term in terms})
        how = (
            "non-negative least squares of step = a + b x batch + c x batch x context over the "
            f"decode grid in {args.grid.name} (median error {fit['median_abs_error']:.1%})"
        )
        derivation |= dict.fromkeys(terms, how)
    save_measured_profile(profile, args.out, settings, model, derivation)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
