"""A run's process, confined: its cgroup, GPU binding, bwrap command line, environment and
pre-exec step, put together once for the run's actor (executor.py) and for what runs the
sandbox without Ray (tests/platform/test_sandbox_direct.py, benchmarks/bench_sandbox_gpu.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rlguard.platform import gpus
from rlguard.platform.joblimits import Cgroup, set_rlimits
from rlguard.platform.sandbox import JobSandbox, bwrap_argv, sandbox_env


@dataclass(frozen=True)
class Confined:
    """What `subprocess.Popen` takes (argv, env, preexec_fn) and the cgroup to remove after."""

    argv: list[str]
    env: dict[str, str]
    preexec: Callable[[], None]
    cgroup: Cgroup


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
    cgroup = Cgroup(cgroup_name, sandbox.limits)
    binding = gpus.bind(ray_ids)
    limits = sandbox.limits

    def preexec() -> None:
        first()
        cgroup.join()
        set_rlimits(limits)

    confined = bwrap_argv(sandbox, argv, cwd, socket, binding)
    return Confined(confined, sandbox_env(env, binding), preexec, cgroup)
