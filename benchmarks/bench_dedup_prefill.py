"""Deduplicated prefill on a tiny Llama: prefill tokens and wall time with and without it.

Acceptance (issue 5): deduplicated prefill cuts prefill tokens by the group factor K and shows its
measured wall-time effect. 16 groups of K samples, prompts of 64-200 tokens; each setting is run
interleaved with the others in one process, `--repeats` times, and the median reported. Settings:
`none` (every sample prefills its prompt, as HF generate on repeated prompts does), `groups` (each
prompt once, its KV cache copied to the K rows), `groups+system` (the same prompts behind a shared
64-token system prompt, which is also prefilled once; `none` and `groups` then prefill it per sample
and per group). The same samples must come out of every setting; the script also counts how many
of 200 samples change between a group generated alone and inside a batch of 64 (float32 near-ties
flipped by batching), and the largest logit gap between a ragged batch and unbatched forwards.

    python benchmarks/bench_dedup_prefill.py --out benchmarks/results/dedup_prefill.json
"""

from __future__ import annotations

import argparse
import platform
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
import transformers

from rlguard.io import write_json
from rlguard.runtime.generation.generator import GenerationOutput, GroupGenerator, GroupRequest
from rlguard.runtime.generation.kv_batch import KVBatch
from rlguard.train.tokenizer import train_tokenizer
from rlguard.train.toy import tiny_llama

SETTINGS = {
    "none": {"dedup_prefill": False},
    "groups": {"share_prefix": False},
    "groups+system": {},
}


def random_prompts(n: int, low: int, high: int, vocab: int, seed: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(low, high + 1, (n,), generator=generator).tolist()
    return [torch.randint(4, vocab, (length,), generator=generator).tolist() for length in lengths]


def requests_for(prompts: list[list[int]], k: int, args: argparse.Namespace) -> list[GroupRequest]:
    return [
        GroupRequest(group, prompt, k, args.max_new_tokens, temperature=1.0, seed=args.seed)
        for group, prompt in enumerate(prompts)
    ]


def tokens(output: GenerationOutput) -> list[list[int]]:
    return [s.tokens for s in output.samples]


def compare_settings(model, eos: int, requests: list[GroupRequest], repeats: int) -> dict[str, Any]:
    """Each setting `repeats` times, interleaved; medians of prefill and whole-generation time."""
    runs: dict[str, list[GenerationOutput]] = {name: [] for name in SETTINGS}
    for _ in range(repeats):
        for name, options in SETTINGS.items():
            generator = GroupGenerator(model, eos, max_batch=64, **options)
            runs[name].append(generator.generate(requests))
    reference = tokens(runs["none"][0])
    result = {}
    for name, outputs in runs.items():
        result[name] = {
            "prefill_tokens": outputs[0].prefill_tokens,
            "decode_tokens": outputs[0].decode_tokens,
            "prefill_s": statistics.median(o.prefill_s for o in outputs),
            "generation_s": statistics.median(o.prefill_s + o.decode_s for o in outputs),
            "same_samples_as_none": all(tokens(o) == reference for o in outputs),
        }
    none = result["none"]
    for name in ("groups", "groups+system"):
        result[name]["prefill_token_cut"] = none["prefill_tokens"] / result[name]["prefill_tokens"]
        result[name]["prefill_speedup"] = none["prefill_s"] / result[name]["prefill_s"]
        result[name]["generation_speedup"] = none["generation_s"] / result[name]["generation_s"]
    return result


def batching_flips(model, eos: int, args: argparse.Namespace) -> dict[str, Any]:
    """Samples that differ between a group run alone and the same group inside a batch of 64,
    sampled (T = 1) and greedy (T = 0)."""
    prompts = random_prompts(25, 64, 200, model.config.vocab_size, args.seed + 1)
    result = {}
    for temperature in (1.0, 0.0):
        requests = [replace(r, temperature=temperature) for r in requests_for(prompts, 8, args)]
        batched = GroupGenerator(model, eos, max_batch=64).generate(requests).samples
        alone = GroupGenerator(model, eos, max_batch=64)
        single = [s for request in requests for s in alone.generate([request]).samples]
        flipped = sum(a.tokens != b.tokens for a, b in zip(batched, single, strict=True))
        result[f"temperature={temperature}"] = {
            "samples": len(single),
            "tokens": sum(len(s.tokens) for s in single),
            "flipped_samples": flipped,
            "rate": flipped / len(single),
        }
    return result


def ragged_logit_gap(model, args: argparse.Namespace) -> float:
    """Largest |logit| difference between rows of a left-padded ragged batch (after 8 decode
    steps) and the same sequences run alone."""
    prompts = random_prompts(8, 64, 200, model.config.vocab_size, args.seed + 2)
    batch = KVBatch.concat([KVBatch.prefill(model, [p]) for p in prompts])
    generator = torch.Generator().manual_seed(args.seed)
    for _ in range(8):
        step = torch.randint(4, model.config.vocab_size, (len(prompts),), generator=generator)
        batch.step(model, step)
        prompts = [[*p, t] for p, t in zip(prompts, step.tolist(), strict=True)]
    with torch.no_grad():
        alone = [model(torch.tensor([p])).logits[0, -1] for p in prompts]
    return float((batch.logits - torch.stack(alone)).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/dedup_prefill.json"))
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = train_tokenizer(["the sea is calm and the sky is wide"] * 8, vocab_size=512)
    model = tiny_llama(tokenizer, args.hidden, args.layers, max_positions=512, seed=args.seed)
    model.eval()
    eos = tokenizer.eos_token_id
    prompts = random_prompts(args.groups, 64, 200, model.config.vocab_size, args.seed)
    system = random_prompts(1, 64, 64, model.config.vocab_size, args.seed + 3)[0]
    by_k = {}
    for k in (4, 8):
        requests = requests_for(prompts, k, args)
        with_system = [replace(r, prompt_ids=system + r.prompt_ids) for r in requests]
        plain = compare_settings(model, eos, requests, args.repeats)
        shared = compare_settings(model, eos, with_system, args.repeats)
        by_k[f"k={k}"] = {"prompts": plain, "prompts_behind_system_prompt": shared}
    write_json(
        args.out,
        {
            "config": {
                **{key: value for key, value in vars(args).items() if key != "out"},
                "prompt_tokens": [64, 200],
                "system_prompt_tokens": len(system),
                "max_batch": 64,
                "torch_threads": 1,
                "dtype": "float32",
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "machine": platform.processor() or platform.machine(),
            },
            "results": by_k,
            "batching_flips": batching_flips(model, eos, args),
            "ragged_batch_max_logit_gap": ragged_logit_gap(model, args),
        },
    )


if __name__ == "__main__":
    main()
