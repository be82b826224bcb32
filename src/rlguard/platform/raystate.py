"""What Ray's control store (its GCS) says about the cluster's nodes and the platform's runs.

Asked through `ray.nodes()` and `ray.get_actor`, which read the GCS directly; Ray's state API
(`ray.util.state`) answers the same questions through the dashboard, which the local head does
not run. A run is dead only on the GCS's word: its node is no longer alive, or its detached
actor's name is released (Ray releases it once the actor is DEAD for good). A failed call to the
actor itself says neither: a cut connection (`ActorUnavailableError`, "may be available later")
or a timeout leaves the run alive, and the caller asks again later.

Whether an actor is still waiting to be created (PENDING_CREATION: not placed, or its worker
still starting) is read from the GCS's actor table through `ray._private.state`, the one reader of
it that does not need the dashboard. The table also names the node whose raylet holds the
actor's lease request: one that can hold the actor's GPUs and CPUs starts its worker (or waits
for work the platform does not know of to free them); one that cannot (the head, a 1-GPU node
for a 2-GPU run) holds it because no node can.
"""

from __future__ import annotations

import logging

import ray
from ray._private import state as gcs

from rlguard.platform.log_format import about
from rlguard.platform.ray_head import NAMESPACE

log = logging.getLogger(__name__)

ALIVE, DEAD, UNKNOWN = "alive", "dead", "unknown"
CREATED, STARTING, UNPLACED = "created", "starting", "unplaced"


def alive_nodes() -> dict[str, int]:
    """The GPUs of each node the GCS holds alive now, by node id (a node that left is absent,
    one that joined is there)."""
    return {n["NodeID"]: int(n["Resources"].get("GPU", 0)) for n in ray.nodes() if n["Alive"]}


def actor_name(run_id: str) -> str:
    return f"rlguard-run-{run_id}"


def run_fate(run_id: str, node_id: str | None) -> str:
    """DEAD if the GCS says the run's actor or its node is dead, ALIVE if it still knows the
    actor, UNKNOWN if it could not be asked (the caller asks again)."""
    try:
        if node_id is not None and node_id not in alive_nodes():
            return DEAD
        ray.get_actor(actor_name(run_id), namespace=NAMESPACE)
    except ValueError:  # no actor of that name: Ray released it, dead for good
        return DEAD
    except Exception as e:  # the GCS itself did not answer: no word on the run
        log.warning("could not ask Ray about run %s: %s", run_id, e, extra=about(run_id=run_id))
        return UNKNOWN
    return ALIVE


def placement(actor: object, gpus: float, cpus: float) -> str:
    """CREATED (or the GCS cannot say), STARTING (its lease request is at a node whose GPUs and
    CPUs can hold it) or UNPLACED (no alive node that can hold it has it)."""
    try:
        info = gcs.actors(actor._actor_id.hex())  # type: ignore[attr-defined]
    except Exception as e:
        log.warning("could not read Ray's actor table: %s", e)
        return CREATED
    if info.get("State") not in ("DEPENDENCIES_UNREADY", "PENDING_CREATION"):
        return CREATED
    node = info["Address"]["NodeID"]
    for held in ray.nodes():
        total = held["Resources"]
        if held["Alive"] and held["NodeID"] == node:
            fits = total.get("GPU", 0) >= gpus and total.get("CPU", 0) >= cpus
            return STARTING if fits else UNPLACED
    return UNPLACED
