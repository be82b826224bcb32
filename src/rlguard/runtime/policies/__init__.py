"""Torch-free planning of one RLHF step, shared by the simulator and the real executors: time
profiles and prices (the inputs), length prediction, assignment, scaling, cut-and-migrate, the
components each ablation turns off, billing and the step report.

Nothing here imports torch or Ray. The public names load on first use (PEP 562).
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "TimeProfile": "rlguard.runtime.policies.profiles",
    "load_profile": "rlguard.runtime.policies.profiles",
    "save_profile": "rlguard.runtime.policies.profiles",
    "shipped_profiles": "rlguard.runtime.policies.profiles",
    "Prices": "rlguard.runtime.policies.pricing",
    "load_prices": "rlguard.runtime.policies.pricing",
    "LengthPredictor": "rlguard.runtime.policies.lengths",
    "equal_count_split": "rlguard.runtime.policies.assignment",
    "length_aware_split": "rlguard.runtime.policies.assignment",
    "choose_actor_count": "rlguard.runtime.policies.scaling",
    "estimate_actor_times": "rlguard.runtime.policies.scaling",
    "group_work": "rlguard.runtime.policies.scaling",
    "plan_moves": "rlguard.runtime.policies.migration",
    "should_cut": "rlguard.runtime.policies.migration",
    "ABLATIONS": "rlguard.runtime.policies.components",
    "SIMULATED_ABLATIONS": "rlguard.runtime.policies.components",
    "Components": "rlguard.runtime.policies.components",
    "plan_generation": "rlguard.runtime.policies.components",
    "Meter": "rlguard.runtime.policies.cost",
    "StepReport": "rlguard.runtime.policies.report",
    "comparison": "rlguard.runtime.policies.report",
    "gains": "rlguard.runtime.policies.report",
    "summarize": "rlguard.runtime.policies.report",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
