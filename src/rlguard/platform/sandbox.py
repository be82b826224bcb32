"""A job's sandbox: the bubblewrap command line that starts one run's process confined.

The platform does not write namespace code of its own here: bubblewrap (`bwrap`, the sandbox
Flatpak runs on) builds the namespaces and the view, and util-linux's `setpriv` drops to the
job's uid. bwrap runs as root in the run's Ray actor, so it can bind any path and create every
namespace without a user namespace; inside, `setpriv` switches to the job's own uid and gid
(no supplementary groups), sets no_new_privs and clears every capability set, so the job is an
ordinary unprivileged user of the host that setuid binaries cannot lift. bwrap's
`--disable-userns` needs `--unshare-user`, which running as real root without a user namespace
rules out; the seccomp filter bwrap loads before it execs `setpriv` (seccomp.py) is what keeps
the job from making user namespaces, and from a few other kernel interfaces.

What the job sees (everything else does not exist for it):
  * /usr, /bin, /lib*, /sbin and a few files of /etc (the dynamic loader's cache, users, time
    zone), read-only; the code, the virtualenv and the operator's declared mounts, read-only at
    their own paths;
  * its job directory, read-write, at its own path (so reported paths mean the same outside),
    and nothing else of the platform's data directory (an empty tmpfs hides it if a read-only
    root contains it);
  * a private /tmp and /dev/shm (tmpfs of a fixed size), a minimal /dev plus the device nodes
    of the GPUs Ray assigned the run (gpus.py), and /proc of its own PID namespace;
  * its own network namespace (a loopback shared by its ranks, nothing else) and the platform's
    API as a unix socket at API_SOCKET, forwarded by the actor (`apiforward.py`);
  * of the actor's environment only ENV_KEPT (`sandbox_env`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rlguard.platform.gpus import NO_GPUS, GpuBinding

API_SOCKET = "/run/rlguard/api.sock"
UID_BASE = 2_000_000_000
"""Jobs' uids: UID_BASE + n, one per job for its whole life (the judges' code sandbox uses
2_100_000_000 and up), far above any account a distribution creates."""

SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",  # Debian's /usr/bin links point here
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/hosts",
    "/etc/mime.types",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/fonts",  # matplotlib's fontconfig
)
HOSTNAME = "localhost"
"""The job's host name: one the host's /etc/hosts resolves to loopback, the only network a job
has. torchrun's rendezvous and gloo advertise the host name to the ranks; under a name that does
not resolve a multi-rank job waited forever."""
MOUNTED = {"/tmp", "/dev", "/dev/shm", "/proc", "/usr"}  # the sandbox's own mounts


ENV_KEPT = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "TOKENIZERS_PARALLELISM",
)
"""What a sandboxed job inherits of the actor's environment; the rest (Ray's token path, the
operator's keys and store URL) stays outside."""


def sandbox_env(env: dict[str, str], gpus: GpuBinding) -> dict[str, str]:
    """A sandboxed job's whole environment: the kept part of the actor's, then the job's own,
    then which GPUs CUDA sees (gpus.py)."""
    kept = {k: os.environ[k] for k in ENV_KEPT if k in os.environ}
    home = {"HOME": "/tmp", "TMPDIR": "/tmp", "USER": "job", "LOGNAME": "job"}
    visible = {} if gpus.visible is None else {"CUDA_VISIBLE_DEVICES": gpus.visible}
    return {**kept, **home, **env, **visible, "RLGUARD_SOCKET": API_SOCKET}


@dataclass(frozen=True)
class Limits:
    """What one run may use; `cpus` 0 means no CPU quota."""

    memory_bytes: int
    pids: int
    cpus: float
    disk_bytes: int  # the job directory's size
    tmp_bytes: int  # each of /tmp and /dev/shm (memory, so also counted in memory_bytes)


@dataclass(frozen=True)
class JobSandbox:
    """One run's sandbox, built by the platform and carried to the run's actor (picklable)."""

    uid: int
    job_dir: str
    data_dir: str
    read_only: tuple[str, ...]  # code, virtualenv, declared mounts
    limits: Limits
    api_url: str  # what the socket forwards to
    bwrap: str = "bwrap"
    setpriv: str = "setpriv"
    seccomp: bool = True  # the job's seccomp filter (seccomp.py); the operator may opt out


def _ancestors(paths: list[str]) -> list[str]:
    """Every directory above the bind targets, shallow first: created 0755 so the job's uid can
    walk to its own directory (bwrap would create them 0700, owned by root)."""
    found: set[str] = set()
    for path in paths:
        parent = Path(path).parent
        while str(parent) != "/":
            found.add(str(parent))
            parent = parent.parent
    return sorted(found, key=lambda p: (p.count("/"), p))


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _dirs(directories: list[str]) -> list[str]:
    return [a for d in directories for a in ("--perms", "0755", "--dir", d)]


def bwrap_argv(
    sandbox: JobSandbox,
    argv: list[str],
    cwd: str,
    socket: str,
    gpus: GpuBinding = NO_GPUS,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The command line that runs `argv` in `sandbox` (from the actor, as root); `seccomp_fd`: a
    file descriptor of the seccomp filter's program (seccomp.program_fd) that bwrap applies."""
    limits, data = sandbox.limits, sandbox.data_dir
    present = sorted((p for p in sandbox.read_only if os.path.exists(p)), key=_depth)
    jobs_root = str(Path(sandbox.job_dir).parent)
    # the job's train config: in the data directory, or under the node's root (jobhome.py)
    platform_files = [p for p in present if _under(p, data) or _under(p, jobs_root)]
    roots = [p for p in present if p not in platform_files]
    args = [
        sandbox.bwrap,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--hostname",
        HOSTNAME,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *[a for node in gpus.nodes for a in ("--dev-bind", node, node)],
    ]
    for tmp in ("/tmp", "/dev/shm"):
        args += ["--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", tmp]
    targets = [*roots, *platform_files, sandbox.job_dir, API_SOCKET, *ETC_FILES]
    args += _dirs(
        [
            d
            for d in _ancestors(targets)
            if d not in MOUNTED and not any(_under(d, r) for r in roots)
        ]
    )
    args += _system_binds()
    for path in roots:
        args += ["--ro-bind", path, path]
    # A read-only root that holds the data directory, or the node's own root of jobs'
    # directories (jobhome.py), would show the store and other jobs: a tmpfs hides them.
    for hidden in (data, *([] if _under(jobs_root, data) else [jobs_root])):
        if any(_under(hidden, r) for r in roots):
            args += ["--perms", "0755", "--tmpfs", hidden]
            below = _ancestors([sandbox.job_dir, *platform_files])
            args += _dirs([d for d in below if _under(d, hidden) and d != hidden])
    for path in platform_files:
        args += ["--ro-bind", path, path]
    args += ["--bind", sandbox.job_dir, sandbox.job_dir, "--bind", socket, API_SOCKET]
    args += ["--chdir", cwd]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    drop = [
        sandbox.setpriv,
        f"--reuid={sandbox.uid}",
        f"--regid={sandbox.uid}",
        "--clear-groups",
        "--no-new-privs",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]
    return [*args, "--", *drop, *argv]
