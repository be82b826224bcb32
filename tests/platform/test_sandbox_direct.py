"""The job sandbox started directly, as a run's actor starts it but without Ray or a server: what
a job gets on a GPU node and under its node's cgroup.

The job is started by `confine.confine`, as executor.py's `JobProcess` starts it; a probe runs
as the job and prints what it saw. The limits must hold under whichever cgroup the node has
(`joblimits.describe()`: v1 on this host and in CI, v2 on the GPU machines). The `cuda` tests
need a GPU node; there, without the server's dependencies:

    PYTHONPATH=src python -m pytest --noconftest -s tests/platform/test_sandbox_direct.py

Without bubblewrap (or root) the module is skipped, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from direct_sandbox import UID, run_job

from rlguard.platform import gpus, joblimits
from rlguard.platform.jobview import host_problem
from rlguard.platform.sandbox import Limits

MiB = 1 << 20
LIMITS = Limits(memory_bytes=256 * MiB, pids=32, cpus=0, disk_bytes=64 * MiB, tmp_bytes=16 * MiB)
GPU_LIMITS = Limits(8192 * MiB, pids=512, cpus=0, disk_bytes=64 * MiB, tmp_bytes=64 * MiB)
"""CUDA and torch need far more host memory and threads than LIMITS give: under LIMITS the GPU
probe neither ran nor failed on an H200 node, it hung until killed."""

GPU_PROBE = """
import glob, json, os, torch
seen = {"uid": os.getuid(), "nodes": sorted(glob.glob("/dev/nvidia*")),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "available": torch.cuda.is_available()}
if seen["available"]:
    a = torch.randn(512, 512, generator=torch.Generator().manual_seed(0))
    props = torch.cuda.get_device_properties(0)
    seen.update(count=torch.cuda.device_count(), name=props.name, uuid=str(props.uuid),
                max_error=float(((a.cuda() @ a.cuda()).cpu() - a @ a).abs().max()))
print(json.dumps(seen))
"""


@pytest.fixture(scope="module", autouse=True)
def sandbox_host():
    problem = host_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the sandbox: {problem}")
        pytest.skip(problem)


@pytest.fixture
def cgroup_node():
    limits = joblimits.describe()
    if not limits.startswith("cgroup"):
        pytest.skip(limits)
    return limits


def probe(tmp_path: Path, code: str, limits=LIMITS, ray_ids=(), env=None) -> dict:
    """What the job printed as JSON on its last line."""
    done = run_job(tmp_path, code, limits, ray_ids, env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    print(json.dumps({"test": tmp_path.name, **seen}))
    return seen


def test_memory_past_the_limit_is_killed_and_the_job_goes_on(tmp_path, cgroup_node):
    code = """
import json, subprocess, sys
hog = "b = bytearray(1 << 30); b[::4096] = b'x' * len(b[::4096])"
print(json.dumps({"hog": subprocess.run([sys.executable, "-c", hog]).returncode}))
"""
    assert probe(tmp_path, code)["hog"] == -9  # the kernel's OOM killer, inside the cgroup


def test_processes_past_the_limit_are_refused(tmp_path, cgroup_node):
    code = """
import json, subprocess
children, error = [], None
try:
    while len(children) < 200:
        children.append(subprocess.Popen(["sleep", "30"]))
except OSError as e:
    error = e.errno
for child in children:
    child.kill()
    child.wait()
print(json.dumps({"started": len(children), "errno": error}))
"""
    seen = probe(tmp_path, code)
    assert seen["errno"] == 11  # EAGAIN
    assert 0 < seen["started"] < LIMITS.pids


def test_the_cpu_quota_caps_busy_processes(tmp_path, cgroup_node):
    limits = Limits(256 * MiB, 32, 0.25, 64 * MiB, 16 * MiB)
    code = """
import json, os, subprocess, sys, time
spin = "import time\\nend = time.monotonic() + 2\\nwhile time.monotonic() < end: pass"
start = time.monotonic()
for p in [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(3)]:
    p.wait()
t = os.times()
print(json.dumps({"cpus": (t.children_user + t.children_system) / (time.monotonic() - start)}))
"""
    # three busy processes would take every core of an idle node; the quota is a quarter of one
    assert probe(tmp_path, code, limits)["cpus"] < 0.25 * 1.5


@pytest.mark.cuda
def test_a_job_computes_on_the_gpu_ray_assigned_it(tmp_path):
    binding = gpus.bind(["0"])
    seen = probe(tmp_path, GPU_PROBE, GPU_LIMITS, ["0"], {"CUDA_VISIBLE_DEVICES": "0"})
    assert seen["uid"] == UID
    assert seen["nodes"] == sorted(binding.nodes)
    assert seen["available"] and seen["count"] == 1
    assert seen["max_error"] < 1e-3
    if binding.visible is not None:  # the driver listed its GPUs: CUDA is told their UUIDs
        assert seen["visible"] == binding.visible == f"GPU-{seen['uuid']}"  # torch drops "GPU-"


@pytest.mark.cuda
def test_a_job_without_a_gpu_cannot_open_one(tmp_path):
    # the job claims GPU 0 in its own environment: no device node of it exists in its view
    seen = probe(tmp_path, GPU_PROBE, GPU_LIMITS, env={"CUDA_VISIBLE_DEVICES": "0"})
    assert seen["nodes"] == []
    assert not seen["available"]
