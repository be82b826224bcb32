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

import contextlib
import errno
import json
import os
import signal
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


def probe(tmp_path: Path, code: str, limits=LIMITS, ray_ids=(), env=None, seccomp=True) -> dict:
    """What the job printed as JSON on its last line."""
    done = run_job(tmp_path, code, limits, ray_ids, env, seccomp=seccomp)
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


KERNEL_PROBE = """
import ctypes, json, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)

def call(result):
    return [result, ctypes.get_errno() if result == -1 else 0]

def command(*argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    return [done.returncode, done.stderr.strip()]

os.mkdir("/tmp/x")
x32_getpid = "import ctypes; ctypes.CDLL(None).syscall(0x40000000 | 39)"
print(json.dumps({
    "unshare -U": command("unshare", "-U", "true"),
    "unshare --map-root-user": command("unshare", "--user", "--map-root-user", "true"),
    "unshare then mount": command("unshare", "-Urm", "mount", "-t", "tmpfs", "none", "/tmp/x"),
    "mount": command("mount", "-t", "tmpfs", "none", "/tmp/x"),
    # os.unshare is Python 3.12's: libc's unshare(CLONE_NEWUSER), mount(2), bpf(2), keyctl(2)
    "unshare(2)": call(libc.unshare(0x10000000)),
    "mount(2)": call(libc.mount(b"none", b"/tmp/x", b"tmpfs", 0, None)),
    "bpf(2)": call(libc.syscall(321, 5, 0, 0)),  # BPF_PROG_LOAD without a program
    "keyctl(2)": call(libc.syscall(250, 0, 0)),  # KEYCTL_GET_KEYRING_ID of no keyring
    "x32 syscall": subprocess.run([sys.executable, "-c", x32_getpid]).returncode,
}))
"""
EPERM_TEXT = "Operation not permitted"


def host_allows_user_namespaces() -> bool:
    for path, refused in (
        ("kernel/unprivileged_userns_clone", "0"),
        ("user/max_user_namespaces", "0"),
    ):
        with contextlib.suppress(OSError):
            if Path("/proc/sys", path).read_text().strip() == refused:
                return False
    return True


def test_a_job_cannot_make_a_user_namespace_or_mount(tmp_path):
    seen = probe(tmp_path, KERNEL_PROBE)
    for cmd in ("unshare -U", "unshare --map-root-user", "unshare then mount"):
        assert seen[cmd][0] != 0 and EPERM_TEXT in seen[cmd][1], cmd
    assert seen["mount"][0] != 0  # util-linux's mount refuses a non-root user by itself
    # mount(2) needs a capability and bpf(2) may be root's alone (kernel.unprivileged_bpf_disabled)
    # without the filter too; unshare(2) and keyctl(2) are refused by the filter alone
    for call in ("unshare(2)", "mount(2)", "bpf(2)", "keyctl(2)"):
        assert seen[call] == [-1, errno.EPERM], call
    assert seen["x32 syscall"] == -signal.SIGSYS  # another ABI's syscall kills the process


def test_without_the_filter_a_job_makes_user_namespaces(tmp_path):
    """`rlguard serve --no-job-seccomp`: what the filter refuses, the kernel decides."""
    if not host_allows_user_namespaces():
        pytest.skip("this host refuses unprivileged user namespaces itself")
    seen = probe(tmp_path, KERNEL_PROBE, seccomp=False)
    assert seen["unshare -U"] == [0, ""]
    assert seen["unshare(2)"] == [0, 0]
    assert seen["keyctl(2)"][1] != errno.EPERM
    assert seen["x32 syscall"] != -signal.SIGSYS


def test_threads_forks_and_subprocesses_still_work_under_the_filter(tmp_path):
    code = """
import ctypes, json, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(4) as pool:  # pthread_create: clone3, then clone on ENOSYS
    squares = sum(pool.map(lambda n: n * n, range(100)))
pid = os.fork()
if pid == 0:
    os._exit(7)
forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
echoed = subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip()
nested = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
libc = ctypes.CDLL(None, use_errno=True)
clone3 = [libc.syscall(435, None, 0), ctypes.get_errno()]
status = dict(line.split(":\t") for line in open("/proc/self/status").read().splitlines())
print(json.dumps({"squares": squares, "forked": forked, "echoed": echoed,
                  "nested": nested.stdout.strip(), "clone3": clone3,
                  "seccomp": status["Seccomp"], "no_new_privs": status["NoNewPrivs"]}))
"""
    seen = probe(tmp_path, code)
    assert seen["squares"] == sum(n * n for n in range(100))
    assert (seen["forked"], seen["echoed"], seen["nested"]) == (7, "hi", "42")
    assert seen["clone3"] == [-1, errno.ENOSYS]
    assert (seen["seccomp"], seen["no_new_privs"]) == ("2", "1")  # a filter, no new privileges


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
