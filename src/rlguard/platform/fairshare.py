"""Tenant quotas and weighted fair shares on top of a policy's order (Kueue's quota + cohort idea).

The policy orders the jobs, as in the simulator; this only decides which of them the GPUs go to
when several tenants want them. Each tenant's fair share is a weighted water-filling of the
cluster's GPUs over the tenants with work (a tenant's demand is capped by its quota, so what it
cannot use goes to the others). Admission walks the policy's order twice: first each job that fits
its tenant's fair share, then (work-conserving) any job that still fits the cluster and its
tenant's quota. A tenant never runs more GPUs than its quota. With one tenant and no binding quota
this is exactly the engine's `greedy_admit` (in order, skipping what does not fit). A policy
without backfill (strict FIFO) stops the walk at the first job the free GPUs cannot hold; a job
held back by its own tenant's share or quota does not stop it (that would let one tenant's limit
block every other tenant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def fair_shares(
    demand: Mapping[str, int], weight: Mapping[str, float], capacity: int
) -> dict[str, float]:
    """Weighted max-min shares of `capacity` GPUs: no tenant gets more than it asks for."""
    shares = dict.fromkeys(demand, 0.0)
    left, open_ = float(capacity), {t for t, d in demand.items() if d > 0}
    while open_ and left > 1e-9:
        total = sum(weight[t] for t in open_)
        offer = {t: left * weight[t] / total for t in open_}
        filled = {t for t in open_ if demand[t] - shares[t] <= offer[t]}
        if not filled:
            for t in open_:
                shares[t] += offer[t]
            break
        for t in filled:
            left -= demand[t] - shares[t]
            shares[t] = float(demand[t])
        open_ -= filled
    return shares


def admit(
    gpus: np.ndarray,
    tenants: Sequence[str],
    fixed: np.ndarray,
    quota: Mapping[str, int],
    weight: Mapping[str, float],
    capacity: int,
    backfill: bool = True,
) -> np.ndarray:
    """Which jobs, in the policy's order (`gpus[i]`, `tenants[i]`), get GPUs. `fixed` jobs keep
    theirs (running jobs between a non-preemptive policy's passes) and count against the rest."""
    demand: dict[str, int] = {}
    for g, t in zip(gpus.tolist(), tenants, strict=True):
        if g <= quota[t]:
            demand[t] = min(quota[t], demand.get(t, 0) + g)
    share = fair_shares(demand, weight, capacity)
    admitted = fixed.copy()
    used: dict[str, int] = dict.fromkeys(demand, 0)
    for i in np.flatnonzero(fixed):
        used[tenants[i]] = used.get(tenants[i], 0) + int(gpus[i])
    left = capacity - int(gpus[fixed].sum())
    for limit in (share, quota):
        for i, (g, t) in enumerate(zip(gpus.tolist(), tenants, strict=True)):
            if admitted[i] or t not in demand:
                continue
            if g > left:
                if backfill:
                    continue
                break
            if used[t] + g > limit[t] + 1e-9:
                continue
            admitted[i] = True
            used[t] += g
            left -= g
    return admitted
