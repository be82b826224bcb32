"""Counter-based sampling: SplitMix64 bit for bit, exact softmax draws, keyed by coordinates."""

from __future__ import annotations

import random

import torch

from rlguard.runtime.generation.sampling import (
    MASK64,
    as_int64,
    gumbel_noise,
    next_tokens,
    splitmix64,
)


def reference_splitmix64(x: int) -> int:
    """Vigna's finaliser on Python's unbounded ints."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def test_torch_splitmix64_matches_the_reference_bit_for_bit() -> None:
    rng = random.Random(0)
    values = [rng.getrandbits(64) for _ in range(2000)] + [0, 1, MASK64, 1 << 63]
    hashed = splitmix64(torch.tensor([as_int64(v) for v in values])).tolist()
    assert [h & MASK64 for h in hashed] == [reference_splitmix64(v) for v in values]


def test_gumbel_noise_has_the_gumbel_mean_and_variance() -> None:
    noise = gumbel_noise(torch.tensor([3, 4]), 50_000)
    assert abs(noise.mean().item() - 0.5772) < 0.02  # Euler-Mascheroni
    assert abs(noise.var().item() - torch.pi**2 / 6) < 0.05


def test_draws_follow_softmax_of_logits_over_temperature() -> None:
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, 0.5])
    temperature = 0.7
    n = 20_000
    coordinates = torch.tensor([[11, 5, 0, position] for position in range(n)])
    tokens = next_tokens(logits.expand(n, -1), torch.full((n,), temperature), coordinates)
    observed = torch.bincount(tokens, minlength=5).double() / n
    expected = torch.softmax(logits.double() / temperature, dim=0)
    assert torch.allclose(observed, expected, atol=0.012)


def test_a_rows_token_depends_on_its_coordinates_not_on_its_batch() -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 40, generator=generator)
    temperatures = torch.tensor([1.0, 0.0, 0.5, 1.0, 2.0, 1.0])
    coordinates = torch.tensor([[7, g, s, p] for g, s, p in [(0, 0, 0), (0, 1, 0), (1, 0, 3)] * 2])
    together = next_tokens(logits, temperatures, coordinates)
    alone = [
        next_tokens(logits[i : i + 1], temperatures[i : i + 1], coordinates[i : i + 1])
        for i in range(6)
    ]
    assert together.tolist() == torch.cat(alone).tolist()
    assert together[1] == logits[1].argmax()  # temperature 0 is greedy
    other_seed = coordinates.clone()
    other_seed[:, 0] = 8
    draws = [next_tokens(logits, torch.ones(6), c) for c in (coordinates, other_seed)]
    assert draws[0].tolist() != draws[1].tolist()
