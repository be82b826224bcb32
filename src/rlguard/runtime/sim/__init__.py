"""A simulator of one synchronous RLHF step at scale, driven by time profiles and synthetic
long-tailed response lengths; see docs/runtime.md for every modelling assumption and its source.

Nothing here imports torch or Ray. The public names load on first use (PEP 562), so that
`python -m rlguard.runtime.sim.roofline` does not find its module imported by the package.
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "PAPER_RESULTS": "rlguard.runtime.sim.setups",
    "SETUPS": "rlguard.runtime.sim.setups",
    "Setup": "rlguard.runtime.sim.setups",
    "check_fits": "rlguard.runtime.sim.setups",
    "measured_batches": "rlguard.runtime.sim.experiment",
    "run_seed": "rlguard.runtime.sim.experiment",
    "run_setup": "rlguard.runtime.sim.experiment",
    "LengthModel": "rlguard.runtime.sim.workload",
    "PromptPool": "rlguard.runtime.sim.workload",
    "TokenBatch": "rlguard.runtime.sim.workload",
    "generation_floor_s": "rlguard.runtime.sim.decode",
    "simulate_generation": "rlguard.runtime.sim.decode",
    "serverful_step": "rlguard.runtime.sim.serverful",
    "ServerlessSim": "rlguard.runtime.sim.serverless",
    "Assumptions": "rlguard.runtime.sim.roofline",
    "derive_profile": "rlguard.runtime.sim.roofline",
    "GpuSpec": "rlguard.runtime.sim.hardware",
    "ModelSpec": "rlguard.runtime.sim.hardware",
    "gpu_spec": "rlguard.runtime.sim.hardware",
    "model_spec": "rlguard.runtime.sim.hardware",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
