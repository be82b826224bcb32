"""Which GPU device nodes a sandboxed run gets, and how CUDA inside is told which GPUs they are.

Ray hands a run GPU ids: CUDA indices on the node (PCI bus order on a node of one GPU model;
set CUDA_DEVICE_ORDER=PCI_BUS_ID for Ray on a mixed one), or UUIDs where the node's Ray was
started with CUDA_VISIBLE_DEVICES naming them. Two things differ inside the sandbox:
  * a GPU's device node is /dev/nvidiaM, M its minor number, which the driver need not give in
    the order of CUDA's indices;
  * CUDA inside sees only the GPUs whose nodes are bound, so an index meant for the node's
    whole list points elsewhere or nowhere.
So the run gets the nodes of its GPUs' minor numbers and CUDA_VISIBLE_DEVICES set to their
UUIDs, both read from the driver's /proc files (`/proc/driver/nvidia/gpus/BUS/information`,
one directory per GPU, named by its PCI bus location). Where those files are missing the ids
are taken as minor numbers and CUDA_VISIBLE_DEVICES is left as Ray set it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")
DEV = Path("/dev")
SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")


@dataclass(frozen=True)
class Gpu:
    minor: int
    uuid: str


@dataclass(frozen=True)
class GpuBinding:
    """What a run's sandbox binds, and CUDA_VISIBLE_DEVICES inside (None: as Ray set it)."""

    nodes: tuple[str, ...] = ()
    visible: str | None = None


NO_GPUS = GpuBinding()


def node_gpus(driver: Path = DRIVER_GPUS) -> list[Gpu]:
    """This node's GPUs in PCI bus order, as the driver lists them (empty where it does not)."""
    gpus = []
    for info in sorted(driver.glob("*/information")):
        fields = {}
        for line in info.read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if fields.get("Device Minor", "").isdigit() and fields.get("GPU UUID"):
            gpus.append(Gpu(int(fields["Device Minor"]), fields["GPU UUID"]))
    return gpus


def _listed(ray_id: str, listed: list[Gpu]) -> Gpu | None:
    """Ray's id as a CUDA index, or as a UUID (a node started with CUDA_VISIBLE_DEVICES=GPU-...)."""
    if ray_id.isdigit():
        return listed[int(ray_id)] if int(ray_id) < len(listed) else None
    return next((g for g in listed if g.uuid == ray_id), None)


def bind(ray_ids: list[str], driver: Path = DRIVER_GPUS, dev: Path = DEV) -> GpuBinding:
    """The binding for the GPUs Ray assigned a run: only device nodes that exist here."""
    if not ray_ids:
        return NO_GPUS
    listed = node_gpus(driver)
    mine = [g for i in ray_ids if (g := _listed(i, listed)) is not None]
    if len(mine) == len(ray_ids):
        minors, visible = [g.minor for g in mine], ",".join(g.uuid for g in mine)
    else:
        minors, visible = [int(i) for i in ray_ids if i.isdigit()], None
    wanted = [dev / f"nvidia{m}" for m in minors] + [dev / name for name in SHARED_NODES]
    return GpuBinding(tuple(str(p) for p in wanted if p.exists()), visible)
