"""What a trainer's scoring pass and update cost on one GPU, by micro-batch and sequence length:
the kernels alone, without FSDP, verl's loop or the network, to test the calibrated step model's
compute terms (1 / MFU by GPU class, the gradient-checkpointing recompute, the per-micro-batch
floor) against a real GPU instead of the fit's guess.

Models are Qwen-shaped, random weights from their config.json numbers (nothing downloaded), bf16,
SDPA attention, no padding. Each model is built at two depths: time = fixed + layers x per layer,
so a full model's time follows without holding it (the fixed part is the embedding, the LM head
and the log-probs over the vocabulary). Three modes per micro-batch, as verl's actor runs them:
  score     no-grad forward, log-probs of the tokens in fp32 (old log-probs, the reference);
  train     forward, log-probs, a policy-gradient loss, backward (the update, no optimizer step);
  train_gc  the same with gradient checkpointing (the forward again in the backward).
Writes each cell's median seconds as runtime/data/kernel_passes.csv's rows (calib/kernels.py,
which the calibration fits with); asserts nothing.

    python benchmarks/bench_pass_efficiency.py --device cuda --gpu h100 \
        --out src/rlguard/runtime/data/kernel_passes.csv
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import Qwen2Config, Qwen2ForCausalLM

from rlguard.io import write_text
from rlguard.train.models import checkpoint_activations

# config.json numbers (Hugging Face Hub): hidden, MLP, heads, KV heads, vocab, tied, full depth;
# then the two depths built (the 7B's shallow enough that an update's activations fit 80 GB)
SHAPES = {
    "qwen2.5-0.5b": (896, 4864, 14, 2, 151936, True, 24, (6, 12)),
    "qwen2.5-3b": (2048, 11008, 16, 2, 151936, True, 36, (4, 12)),
    "qwen2-7b": (3584, 18944, 28, 4, 152064, False, 28, (2, 6)),
    "qwen2.5-32b": (5120, 27648, 40, 8, 152064, False, 64, (1, 3)),
}
MODES = ("score", "train", "train_gc")
MICRO_BATCHES = (1, 4, 16)
SEQUENCES = (256, 512, 1024, 2048)


def build(name: str, layers: int, device: str) -> Qwen2ForCausalLM:
    hidden, mlp, heads, kv_heads, vocab, tied, _, _ = SHAPES[name]
    config = Qwen2Config(
        hidden_size=hidden,
        intermediate_size=mlp,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        vocab_size=vocab,
        tie_word_embeddings=tied,
        rope_theta=1_000_000.0,
        attn_implementation="sdpa",
    )
    with torch.device(device):
        model = Qwen2ForCausalLM(config)
    return model.to(torch.bfloat16)


def pass_once(model: Qwen2ForCausalLM, ids: torch.Tensor, mode: str) -> None:
    """One micro-batch of `mode`: log-probs of each next token, as verl's actor computes them."""
    train = mode != "score"
    with torch.set_grad_enabled(train):
        logits = model(input_ids=ids, use_cache=False).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        if train:
            (-logp.mean()).backward()
            model.zero_grad(set_to_none=True)


def time_cell(
    model: Qwen2ForCausalLM, mode: str, micro: int, seq: int, device: str, reps: int
) -> float:
    """Median seconds of one micro-batch after two warm-up passes."""
    model.train(mode != "score")
    ids = torch.randint(0, model.config.vocab_size, (micro, seq), device=device)
    times = []
    for i in range(reps + 2):
        _sync(device)
        began = time.perf_counter()
        pass_once(model, ids, mode)
        _sync(device)
        if i >= 2:
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def measure(
    name: str, depths: tuple[int, ...], device: str, reps: int, max_tokens: int
) -> list[dict[str, Any]]:
    cells = []
    for layers in depths:
        model = build(name, layers, device)
        for mode in MODES:  # train_gc last: checkpointing stays on once enabled
            if mode == "train_gc":
                checkpoint_activations(model)
            for micro in MICRO_BATCHES:
                for seq in SEQUENCES:
                    if micro * seq > max_tokens:
                        continue
                    try:
                        seconds = time_cell(model, mode, micro, seq, device, reps)
                    except torch.OutOfMemoryError:  # the cell is left out, and says so
                        print(f"{name} L{layers} {mode} {micro}x{seq}: out of memory", flush=True)
                        model.zero_grad(set_to_none=True)
                        torch.cuda.empty_cache()
                        continue
                    cells.append(
                        {
                            "model": name,
                            "layers": layers,
                            "mode": mode,
                            "micro_batch": micro,
                            "seq": seq,
                            "seconds": seconds,
                        }
                    )
                    print(
                        f"{name} L{layers} {mode:8s} {micro:2d}x{seq:4d} {seconds * 1e3:9.2f} ms",
                        flush=True,
                    )
        del model
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument(
        "--depths",
        type=int,
        nargs=2,
        metavar=("SHALLOW", "DEEP"),
        help="layers of the two builds (default: each model's in SHAPES)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=16_384,
        help="per micro-batch (the fp32 log-probs over 152k ids must fit)",
    )
    parser.add_argument("--gpu", required=True, help="the GPU's key in runtime/sim/hardware.py")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    cells = []
    for name in args.models:
        depths = tuple(args.depths) if args.depths else SHAPES[name][-1]
        cells += measure(name, depths, args.device, args.reps, args.max_tokens)
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    source = (
        f"benchmarks/bench_pass_efficiency.py on {device}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}, median of {args.reps}"
    )
    write_cells(args.out, source, args.gpu, cells)


def write_cells(out: Path, source: str, gpu: str, cells: list[dict[str, Any]]) -> None:
    """runtime/data/kernel_passes.csv's columns (calib/kernels.py's KernelCell)."""
    text = io.StringIO()
    columns = ["source", "gpu", "model", "layers", "mode", "micro_batch", "seq", "seconds"]
    writer = csv.DictWriter(text, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({"source": source, "gpu": gpu, **cell} for cell in cells)
    write_text(out, text.getvalue())


if __name__ == "__main__":
    main()
