"""Measure a TimeProfile for the tiny Llama on this machine and write it as a profile YAML.

The simulator's profiles are data a user measures on their own hardware; this is that measurement
for the CPU model the real-run benchmarks use. `cold_start_s` is the time to load the saved
checkpoint from disk (from_pretrained), the part of a function's cold start this process can see;
container and Ray actor start are not included. One torch thread.

    python benchmarks/bench_profile.py --out benchmarks/results/profile_tiny_llama_cpu.yaml
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from transformers import LlamaForCausalLM

from rlguard.runtime.profiling import ProfileSettings, measure_profile, save_measured_profile
from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/profile_tiny_llama_cpu.yaml")
    )
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--max-batch", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = train_tokenizer(["the sea is calm and the sky is wide"] * 8, vocab_size=512)
    model = tiny_llama(tokenizer, args.hidden, args.layers, max_positions=512, seed=0)
    with tempfile.TemporaryDirectory() as checkpoint:
        model.save_pretrained(checkpoint)
        start = time.perf_counter()
        model = LlamaForCausalLM.from_pretrained(checkpoint)
        load_s = time.perf_counter() - start
    settings = ProfileSettings(batch_sizes=(1, 2, 4, 8, 16, 32, 64))
    name = f"tiny-llama-h{args.hidden}-l{args.layers}-cpu"
    profile = measure_profile(
        model, name, cold_start_s=load_s, max_batch=args.max_batch, settings=settings
    )
    note = "from_pretrained of the saved checkpoint on this machine; no container or Ray start"
    save_measured_profile(profile, args.out, settings, model, cold_start_note=note)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
