"""The RLHFless components an executor can switch off, and the generation plan two of them make.

The simulator and the real serverless executor share this module, so an ablation means the same
thing in both: `no-dedup` prefills every sample's prompt, `no-assign` splits groups by equal
counts, `no-scaling` generates on every worker, `no-migrate` never cuts a long tail.

`overlap` (scoring finished groups on workers whose generation is done while the tail still
decodes) is our assumption, not a component the paper names, and only the simulator models it:
the real executor scores after generation and ignores the flag, so `rlguard runtime bench`
ablates the four shared components (`ABLATIONS`) and the simulator one more
(`SIMULATED_ABLATIONS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rlguard.runtime.policies.assignment import equal_count_split, length_aware_split
from rlguard.runtime.policies.pricing import Prices
from rlguard.runtime.policies.profiles import TimeProfile
from rlguard.runtime.policies.scaling import choose_actor_count, group_work


@dataclass(frozen=True)
class Components:
    dedup: bool = True
    assign: bool = True
    scaling: bool = True
    migrate: bool = True
    overlap: bool = True  # simulator only (see above)


ABLATIONS = {
    "no-dedup": Components(dedup=False),
    "no-assign": Components(assign=False),
    "no-scaling": Components(scaling=False),
    "no-migrate": Components(migrate=False),
}
SIMULATED_ABLATIONS = {**ABLATIONS, "no-overlap": Components(overlap=False)}


def plan_generation(
    parts: Components,
    predicted: Sequence[float],
    k: int,
    profile: TimeProfile,
    prices: Prices,
    lam: float,
    *,
    most: int,
    warm: int,
    prompt_tokens: float,
    idle_rejoin: bool,
) -> list[list[int]]:
    """The groups each generation actor holds. Cost-aware scaling picks how many of the `most`
    workers generate (`warm` of them already run; `idle_rejoin`: see `choose_actor_count`), or all
    of them without `scaling`; the groups are then split into runs of equal predicted decode work,
    longest first, or by equal counts without `assign`. `prompt_tokens`: the mean prompt length."""
    n = most
    if parts.scaling:
        n = choose_actor_count(
            predicted,
            k,
            profile,
            prices,
            lam,
            range(1, most + 1),
            warm=warm,
            prompt_tokens=prompt_tokens,
            idle_rejoin=idle_rejoin,
        ).n_actors
    if not parts.assign:
        return equal_count_split(len(predicted), n)
    return length_aware_split(predicted, n, group_work(predicted, k, profile, prompt_tokens))
