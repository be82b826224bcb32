"""Which device nodes and CUDA_VISIBLE_DEVICES a run gets for Ray's GPU ids (gpus.py), on a
node whose driver lists its GPUs in /proc (built here as files) and on one where it does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlguard.platform import gpus

INFO = """Model: \t\t NVIDIA H100 80GB HBM3
IRQ:   \t\t 0
GPU UUID: \t {uuid}
Video BIOS: \t 96.00.99.00.01
Bus Type: \t PCIe
Bus Location: \t {bus}
Device Minor: \t {minor}
GPU Excluded:\t No
"""
# bus order is CUDA's (and Ray's) index order; the minor numbers the driver gave are not
NODE = [
    ("0000:18:00.0", 2, "GPU-aaaa"),
    ("0000:3b:00.0", 0, "GPU-bbbb"),
    ("0000:86:00.0", 1, "GPU-cccc"),
]


@pytest.fixture
def node(tmp_path) -> tuple[Path, Path]:
    driver, dev = tmp_path / "gpus", tmp_path / "dev"
    dev.mkdir()
    for bus, minor, uuid in NODE:
        (driver / bus).mkdir(parents=True)
        (driver / bus / "information").write_text(INFO.format(uuid=uuid, bus=bus, minor=minor))
        (dev / f"nvidia{minor}").touch()
    (dev / "nvidiactl").touch()
    (dev / "nvidia-uvm").touch()
    return driver, dev


def test_the_driver_lists_gpus_in_bus_order(node):
    driver, _ = node
    assert gpus.node_gpus(driver) == [gpus.Gpu(minor, uuid) for _, minor, uuid in NODE]


def test_ray_ids_bind_their_gpus_minor_nodes_and_name_them_by_uuid(node):
    driver, dev = node
    binding = gpus.bind(["0", "2"], driver, dev)
    assert binding.nodes == tuple(
        str(dev / n) for n in ("nvidia2", "nvidia1", "nvidiactl", "nvidia-uvm")
    )
    assert binding.visible == "GPU-aaaa,GPU-cccc"


def test_ray_ids_that_are_uuids_bind_those_gpus(node):
    driver, dev = node  # a node whose Ray was started with CUDA_VISIBLE_DEVICES=GPU-...
    binding = gpus.bind(["GPU-cccc"], driver, dev)
    assert binding.nodes[0] == str(dev / "nvidia1")
    assert binding.visible == "GPU-cccc"


def test_without_the_drivers_list_the_ids_are_minor_numbers(node, tmp_path):
    _, dev = node
    binding = gpus.bind(["1"], tmp_path / "no-driver", dev)
    assert binding == gpus.GpuBinding(
        (str(dev / "nvidia1"), str(dev / "nvidiactl"), str(dev / "nvidia-uvm"))
    )


def test_an_id_past_the_drivers_list_falls_back_too(node):
    driver, dev = node
    assert gpus.bind(["7"], driver, dev).visible is None


def test_a_run_without_gpus_binds_nothing(node):
    driver, dev = node
    assert gpus.bind([], driver, dev) == gpus.GpuBinding()
