"""A run's process, confined: its cgroup, GPU binding, bwrap command line, seccomp filter,
environment and pre-exec step, put together once for the run's actor (executor.py) and for what
runs the sandbox without Ray (tests/platform/test_sandbox_direct.py,
benchmarks/bench_sandbox_gpu.py)."""

from __future__ import annotations

import contextlib
import ctypes
import signal
from collections.abc import Callable
from dataclasses import dataclass

from rlguard.platform import gpus, seccomp
from rlguard.platform.joblimits import Cgroup, set_rlimits
from rlguard.platform.sandbox import JobSandbox, bwrap_argv, sandbox_env

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child, before exec: get SIGKILL when the thread that spawned it ends (Linux), so
    no process outlives its actor (nor the actor's thread that waits on it)."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True)
class Confined:
    """What `subprocess.Popen` takes (argv, env, preexec_fn, pass_fds) and the cgroup to remove
    after; the caller closes `pass_fds` once the process is spawned (the child has its own)."""

    argv: list[str]
    env: dict[str, str]
    preexec: Callable[[], None]
    cgroup: Cgroup
    pass_fds: tuple[int, ...] = ()


def confine(
    sandbox: JobSandbox,
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    socket: str,
    ray_ids: list[str],
    cgroup_name: str,
    first: Callable[[], None] = lambda: None,
) -> Confined:
    """`argv` to run in `sandbox` on the GPUs Ray assigned (`ray_ids`); `first` runs in the
    child before it joins the cgroup (the actor's parent-death signal)."""
    fd = seccomp.program_fd() if sandbox.seccomp else None  # first: it fails where no libseccomp
    cgroup = Cgroup(cgroup_name, sandbox.limits)
    binding = gpus.bind(ray_ids)
    limits = sandbox.limits

    def preexec() -> None:
        first()
        cgroup.join()
        set_rlimits(limits)

    confined = bwrap_argv(sandbox, argv, cwd, socket, binding, fd)
    fds = () if fd is None else (fd,)
    return Confined(confined, sandbox_env(env, binding), preexec, cgroup, fds)
