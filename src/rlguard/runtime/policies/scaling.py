"""Cost-aware actor scaling (RLHFless): per candidate actor count, predict the generation phase's
latency and GPU-time from the time profile and the predicted lengths, and pick the count that
minimises lam * normalised latency + (1 - lam) * normalised GPU-time (each divided by its best
value over the candidates, so lam = 1 is fastest and lam = 0 cheapest).

The estimate assumes the length-aware split and continuous batching. An actor holding T predicted
tokens, longest group L and S concurrent sequences (slots, or as many as its KV cache holds at
their mean context) runs max(L, T / S) decode steps; the batch sizes of those steps add up to T
and their contexts add up to the sum over sequences of (prompt x length + length^2 / 2). The
memory-bound time is the sum of those terms' costs; the compute floor is T sequence-steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlguard.runtime.policies.assignment import length_aware_split
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile


@dataclass(frozen=True)
class ScalingDecision:
    n_actors: int
    latency_s: float
    gpu_s: float
    score: float


def _concurrency(lengths: np.ndarray, k: int, profile: TimeProfile, prompt_tokens: float) -> float:
    """Sequences an actor runs at once: its slots, or as many as its KV cache holds at the mean
    context of a sequence running at a random step (prompt + E[L^2] / (2 E[L]))."""
    slots = float(min(profile.max_batch, k * len(lengths)))
    tokens = float(lengths.sum())
    if profile.kv_capacity_tokens is not None and tokens > 0:
        mean_context = prompt_tokens + float((lengths**2).sum()) / (2 * tokens)
        slots = min(slots, max(1.0, profile.kv_capacity_tokens / max(mean_context, 1.0)))
    return slots


def group_work(
    predicted: Sequence[float], k: int, profile: TimeProfile, prompt_tokens: float = 0.0
) -> np.ndarray:
    """Predicted decode seconds each group adds to an actor of full batches: its tokens' share of
    the weight reads, and the KV cache its samples read at every step (which grows with the
    square of the length), or the compute floor if that is larger."""
    lengths = np.asarray(predicted, dtype=float)
    if lengths.size == 0:
        return lengths
    per_token = profile.decode_s_per_step / _concurrency(lengths, k, profile, prompt_tokens)
    per_token += profile.decode_s_per_seq
    memory = per_token * lengths
    memory += profile.decode_s_per_context_token * (lengths * prompt_tokens + lengths**2 / 2)
    return k * np.maximum(memory, profile.decode_compute_s_per_seq * lengths)


def estimate_actor_times(
    predicted: Sequence[float],
    k: int,
    profile: TimeProfile,
    n_actors: int,
    prompt_tokens: float = 0.0,
) -> np.ndarray:
    """Predicted decode seconds of each actor under the length-aware split by `group_work` (0 for
    an empty one); `prompt_tokens` is the mean prompt length (context each sequence starts with)."""
    lengths = np.asarray(predicted, dtype=float)
    times = np.zeros(n_actors)
    work = group_work(lengths, k, profile, prompt_tokens)
    for i, groups in enumerate(length_aware_split(lengths, n_actors, work)):
        if not groups:
            continue
        group_lengths = lengths[groups]
        tokens = k * float(group_lengths.sum())
        context = k * float((group_lengths * prompt_tokens + group_lengths**2 / 2).sum())
        slots = _concurrency(group_lengths, k, profile, prompt_tokens)
        steps = max(float(group_lengths.max()), tokens / slots)
        memory = (
            profile.decode_s_per_step * steps
            + profile.decode_s_per_seq * tokens
            + profile.decode_s_per_context_token * context
        )
        times[i] = max(memory, profile.decode_compute_s_per_seq * tokens)
    return times


def choose_actor_count(
    predicted: Sequence[float],
    k: int,
    profile: TimeProfile,
    prices: Prices,
    lam: float,
    candidates: Sequence[int],
    warm: int = 0,
    prompt_tokens: float = 0.0,
    idle_rejoin: bool = False,
) -> ScalingDecision:
    """The best candidate count. `warm` actors are already running (e.g. held from the previous
    phase); every other actor is started for the phase and, if the platform bills cold starts,
    pays `cold_start_s` of GPU time. `prompt_tokens`: the mean prompt length. `idle_rejoin`: the
    warm actors left out are needed again right after the phase (colocated workers that also
    score and train), so each still costs min(latency, cold start) of GPU time: kept warm
    through the phase, or released and started again."""
    if not 0 <= lam <= 1:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    if k < 1:
        raise ValueError(f"need at least one sample per group, got k={k}")
    if not candidates or min(candidates) < 1:
        raise ValueError(f"candidate actor counts must be positive, got {list(candidates)}")
    cold_s = profile.cold_start_s if prices.bill_cold_start else 0.0
    latency, gpu_s = [], []
    for n in candidates:
        times = estimate_actor_times(predicted, k, profile, n, prompt_tokens)
        slowest = float(times.max())
        busy = float(times.sum()) + max(0, n - warm) * cold_s
        if idle_rejoin:
            busy += max(0, warm - n) * min(slowest, cold_s)
        latency.append(slowest)
        gpu_s.append(busy * profile.gpus_per_actor)
    lat, gpu = np.array(latency), np.array(gpu_s)
    scores = lam * lat / max(lat.min(), 1e-12) + (1 - lam) * gpu / max(gpu.min(), 1e-12)
    best = int(np.argmin(scores))  # first minimum: among ties, the candidate listed first
    return ScalingDecision(int(candidates[best]), latency[best], gpu_s[best], float(scores[best]))
