"""Batched generation on torch: a group's K samples from one deduplicated prefill, continuous
batching over a KV cache, sampling keyed by (seed, group, sample, position), a measured time
profile of this engine, and samples turned into the trainer's `Rollouts`.

The public names load on first use (PEP 562): importing this package does not import torch.
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "GenerationOutput": "rlguard.runtime.generation.generator",
    "GroupGenerator": "rlguard.runtime.generation.generator",
    "GroupRequest": "rlguard.runtime.generation.generator",
    "SampleResult": "rlguard.runtime.generation.generator",
    "KVBatch": "rlguard.runtime.generation.kv_batch",
    "ProfileSettings": "rlguard.runtime.generation.profiling",
    "measure_profile": "rlguard.runtime.generation.profiling",
    "save_measured_profile": "rlguard.runtime.generation.profiling",
    "to_rollouts": "rlguard.runtime.generation.rollouts",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
