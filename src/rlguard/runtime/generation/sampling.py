"""Counter-based sampling: a token depends on (seed, group, sample, position) and the logits only.

A stateful RNG would make a sample depend on which other sequences shared its batch or actor, so
serverful and serverless executors (or a migrated sequence) would draw different completions.
Here the noise for every vocabulary entry is a SplitMix64 hash of the sample's coordinates, computed
with integer ops on the logits' device, and the token is the Gumbel-max of logits / T + noise: an
exact draw from softmax(logits / T).
"""

from __future__ import annotations

import torch

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # SplitMix64's increment
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def as_int64(value: int) -> int:
    """The int64 with the same 64 bits as `value` mod 2**64 (torch has no uint64 arithmetic)."""
    value &= MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns (torch's `>>` is arithmetic)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def splitmix64(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64's finaliser on int64 tensors; multiplication wraps mod 2**64."""
    x = (x ^ shift_right(x, 30)) * as_int64(MIX1)
    x = (x ^ shift_right(x, 27)) * as_int64(MIX2)
    return x ^ shift_right(x, 31)


def sample_keys(coordinates: torch.Tensor) -> torch.Tensor:
    """One 64-bit key per row of integer coordinates [B, C] (seed, group, sample, position)."""
    key = torch.zeros(coordinates.shape[0], dtype=torch.int64, device=coordinates.device)
    for column in coordinates.T:
        key = splitmix64((key ^ column) + as_int64(GOLDEN))
    return key


def gumbel_noise(keys: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Standard Gumbel noise [B, V] in float64: entry (b, v) is output v + 1 of SplitMix64 seeded
    with keys[b], its top 53 bits mapped into (0, 1)."""
    steps = torch.arange(1, vocab_size + 1, dtype=torch.int64, device=keys.device)
    bits = splitmix64(keys[:, None] + steps[None, :] * as_int64(GOLDEN))
    uniform = (shift_right(bits, 11).double() + 0.5) / float(1 << 53)
    return -torch.log(-torch.log(uniform))


def next_tokens(
    logits: torch.Tensor, temperatures: torch.Tensor, coordinates: torch.Tensor
) -> torch.Tensor:
    """Token per row of `logits` [B, V]: argmax where the temperature is 0, else a Gumbel-max draw
    keyed by that row's coordinates [B, C]."""
    greedy = logits.argmax(dim=-1)
    sampled = temperatures > 0
    if not bool(sampled.any()):
        return greedy
    noise = gumbel_noise(sample_keys(coordinates[sampled]), logits.shape[-1])
    scores = logits[sampled].double() / temperatures[sampled, None].double() + noise
    return greedy.masked_scatter(sampled, scores.argmax(dim=-1))
