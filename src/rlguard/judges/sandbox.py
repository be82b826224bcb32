"""Run one untrusted Python program in a throwaway, resource-capped child process.

`run_program(source, limits)` never executes the program in the calling process. It starts
`sys.executable -I -S` (isolated: no PYTHON* variables, no user or site packages, so the program
sees the stdlib only) on a bootstrap (`_sandbox_boot.py`) that confines itself and then runs the
program. What holds depends on the host; `capabilities()` probes it once and `describe()` says it.

Always, as root or not:
  * a fresh process in a new session and process group, killed as a group (SIGKILL) at the end;
  * rlimits: CPU seconds (SIGXCPU, then SIGKILL a second later), address space (MemoryError),
    process count, file size, open files, no core dumps; no_new_privs (setuid binaries cannot
    regain privileges) and not dumpable;
  * a wall-clock deadline kept by the parent; every wait is bounded and the child is reaped;
    the bootstrap process dies with the judge (PR_SET_PDEATHSIG); stdin is /dev/null;
  * stdout and stderr read through pipes, keeping a tail; more than `output_bytes` in total kills
    the program ("output limit"), so printing 1 GB costs neither the judge's memory nor its disk;
  * a private 0700 temp dir as cwd, HOME and TMPDIR, removed afterwards; an environment of only
    PATH=/usr/bin:/bin, HOME, TMPDIR and LANG=C.UTF-8, so no secret of the judge's leaks;
  * an audit hook refusing sockets, exec/spawn/system, signals, ctypes and other processes'
    /proc entries. The hook is not a security boundary (a fresh interpreter started through
    _posixsubprocess has none); it turns the obvious attempts into clean errors.
  * after a normal end the bootstrap reports a nonce, so `sys.exit(0)` or `os._exit(0)` before the
    tests ran is not a pass. A program that digs the nonce out of the bootstrap's frames could
    forge it: like the hook, this stops reward hacking by accident, not a determined attacker.
    The code judge does not rely on either: its tests run in a second sandbox (below).

With tests (the code judge), two sandboxes as above run side by side, each with the same limits
and a uid of its own: the candidate's program in one, answering calls on a pipe pair; the setup
and tests in the other, calling it, holding the status pipe and the nonce. The candidate's hook
leaves frames, tracing and gc open (its process holds nothing of the tests'); the tests' side
keeps them shut.

As root (the probe confirms each step; a step that probed fine but then fails is an error):
  * the child switches to a uid of its own (2_100_000_000 + slot, one per concurrent sandbox on the
    host, claimed with a lock file): it cannot signal or ptrace the judge or other sandboxes, read
    their /proc entries, or write root's files. RLIMIT_NPROC (which Linux does not enforce for
    root) counts that uid alone, so `nproc` bounds each sandbox on its own, independent of how many
    run at once. At the end every process of the uid is killed with kill(-1) from inside the uid,
    which also catches grandchildren that left the process group with setsid;
  * if the kernel allows namespaces: a network namespace (a down loopback, nothing else), and a
    mount namespace whose root is a tmpfs holding only the interpreter's dirs and the system's
    library dirs (/usr, /lib, ...), all read-only, and one `disk_bytes` noexec tmpfs over every
    temp dir (/tmp, /var/tmp, /dev/shm, /run/lock, the judge's tempdir); where that root cannot
    be made, the host's whole filesystem read-only, with closed dirs that hold the interpreter
    (like /root) replaced by an empty dir exposing only the interpreter; and a
    pid namespace with its own /proc, where the program (pid 2; pid 1 reaps and reports its end
    to the bootstrap outside) sees only its own processes: not the judge's argv, not another
    sandbox;
  * without namespaces (e.g. Docker's default seccomp profile): no network isolation beyond the
    hook, and files the uid left in temp dirs are deleted after the run; it can still write into
    other world-writable dirs. A stdlib under a dir the uid cannot enter (pyenv under /root) is
    imported through fds opened while still root; if even that fails, the sandbox refuses to run.
  * root that cannot switch uid refuses to run at all, rather than run programs as root.

Not root (a developer machine): the program runs under the judge's own uid. It can signal,
ptrace (subject to Yama) and read /proc of the judge's processes and write wherever the user can;
an escaped setsid grandchild survives the group kill; RLIMIT_NPROC counts all the user's threads,
so it is set to the user's current count plus `nproc`. Only the hook stands in front of the
network, the judge's signals and its /proc entries.

Memory is capped per process: a sandbox can hold up to `nproc * memory_bytes` (+ `disk_bytes` of
tmpfs); there is no cgroup. Without a pid namespace, other processes on the host
(/proc/<pid>/cmdline, not environ) stay visible.
"""

from __future__ import annotations

import functools
import marshal
import os
import resource
import secrets
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, replace

from rlguard.judges import _sandbox_host as host
from rlguard.judges._sandbox_host import SandboxError
from rlguard.judges._sandbox_io import Pumped, exited, pump

__all__ = [
    "Limits",
    "SandboxCapabilities",
    "SandboxError",
    "SandboxResult",
    "capabilities",
    "describe",
    "run_program",
]

_HERE = os.path.dirname(os.path.abspath(__file__))
_BOOT = os.path.join(_HERE, "_sandbox_boot.py")
_WIRE = os.path.join(_HERE, "_sandbox_wire.py")  # the harnesses, compiled here and sent
_TESTS = os.path.join(_HERE, "_sandbox_tests.py")
_SERVE = os.path.join(_HERE, "_sandbox_serve.py")
_SIGNALS = {signal.SIGXCPU: "cpu time limit", signal.SIGXFSZ: "file size limit"}
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    wall_s: float = 5.0
    cpu_s: int = 5
    memory_bytes: int = 512 * MIB  # RLIMIT_AS, per process
    nproc: int = 8  # processes and threads, the first one included
    fsize_bytes: int = 16 * MIB
    nofile: int = 64
    disk_bytes: int = 32 * MIB  # the private tmpfs, where namespaces are available
    output_bytes: int = MIB  # stdout + stderr, beyond which the program is killed
    tail_bytes: int = 64 * 1024  # kept of each of stdout and stderr

    def __post_init__(self) -> None:
        counts = (self.cpu_s, self.nproc, self.nofile, self.memory_bytes, self.fsize_bytes)
        sizes = (self.disk_bytes, self.output_bytes, self.tail_bytes)
        if self.wall_s <= 0 or min(*counts, *sizes) < 1:
            raise ValueError(f"limits must be positive: {self}")


@dataclass(frozen=True, slots=True)
class SandboxResult:
    exit_code: int  # negative: killed by that signal
    stdout_tail: str
    stderr_tail: str
    timed_out: bool
    reason: str  # empty when the program ran to its end and exited 0
    wall_s: float
    completed: bool = False  # the program's last line ran (not an early exit)
    records: tuple[str, ...] = ()  # the tests' check records, in the order they were sent

    @property
    def ok(self) -> bool:
        return not self.reason


@dataclass(frozen=True, slots=True)
class SandboxCapabilities:
    root: bool
    dedicated_uids: bool
    namespaces: bool  # private network + mount namespaces
    readonly_root: bool
    problem: str = ""  # why the sandbox refuses to run here
    pid_namespace: bool = False  # the program sees only its own processes in /proc
    empty_root: bool = False  # its root holds only the interpreter and the system's libraries
    import_through_fds: bool = False  # the stdlib sits under a dir the sandbox uid cannot enter

    def describe(self) -> str:
        if self.problem:
            return f"sandbox unavailable: {self.problem}"
        who = "a dedicated uid per sandbox" if self.dedicated_uids else "the judge's own uid"
        lines = [f"programs run as {who}, with rlimits, a scrubbed env and a private cwd"]
        if self.namespaces:
            fs = "read-only filesystem" if self.readonly_root else "writable filesystem"
            lines.append(f"network namespace (no network); private /tmp; {fs}")
            if self.empty_root:
                lines.append("its root holds only the interpreter and the system's libraries")
            if self.pid_namespace:
                lines.append("pid namespace: /proc shows the program's own processes only")
        else:
            lines.append("no namespaces: the network is blocked only by an audit hook")
        if not self.dedicated_uids:
            lines.append("same uid: the program could signal or read the judge; not a boundary")
        return "\n".join(lines)


_caps: SandboxCapabilities | None = None
_caps_lock = threading.Lock()


def capabilities() -> SandboxCapabilities:
    """What this host allows, probed once per process."""
    global _caps
    with _caps_lock:
        if _caps is None:
            _caps = _probe()
        return _caps


def describe() -> str:
    return capabilities().describe()


def _probe() -> SandboxCapabilities:
    def unavailable(problem: str) -> SandboxCapabilities:
        return SandboxCapabilities(True, False, False, False, problem)

    if os.geteuid() != 0:
        return SandboxCapabilities(
            root=False, dedicated_uids=False, namespaces=False, readonly_root=False
        )
    if not host.uids_mapped():
        return unavailable("root, but the sandbox uids are not mapped in this user namespace")
    with host.claim_uid() as uid:
        cfg = _config(uid=uid, workdir="/", probe=True)
        try:
            done = subprocess.run(
                _command(),
                input=marshal.dumps(cfg),
                capture_output=True,
                env={},
                cwd="/",
                start_new_session=True,
                timeout=30,
                check=True,
            )
            got = marshal.loads(done.stdout)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            return unavailable(f"probe failed: {exc}")
    if not got["uid"]:
        return unavailable("root, but cannot switch to a sandbox uid")
    through_fds = not got["namespaces"] and got["stdlib_through_fd"]
    if not (got["stdlib_readable"] or through_fds):
        return unavailable(f"the sandbox uid cannot read the stdlib at {cfg['stdlib']}")
    return SandboxCapabilities(
        root=True,
        dedicated_uids=True,
        namespaces=got["namespaces"],
        readonly_root=got["namespaces"] and got["readonly_root"],
        pid_namespace=got["namespaces"] and got["pid_namespace"],
        empty_root=got["namespaces"] and got["empty_root"],
        import_through_fds=through_fds and not got["stdlib_readable"],
    )


def _command() -> list[str]:
    return [sys.executable, "-I", "-S", _BOOT]


def _config(
    *, uid: int | None, workdir: str, probe: bool = False, **extra: object
) -> dict[str, object]:
    stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
    expose = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    return {
        "probe": probe,
        "uid": uid,
        "workdir": workdir,
        "parent_pid": os.getpid(),
        "stdlib": stdlib,
        "expose": sorted(expose),
        "tmp_dirs": host.temp_dirs(),
        **extra,
    }


def _rlimits(limits: Limits, same_uid: bool) -> dict[str, tuple[int, int]]:
    nproc = limits.nproc + (host.task_count(os.getuid()) if same_uid else 0)
    wanted = {
        "RLIMIT_CPU": (limits.cpu_s, limits.cpu_s + 1),
        "RLIMIT_AS": (limits.memory_bytes, limits.memory_bytes),
        "RLIMIT_NPROC": (nproc, nproc),
        "RLIMIT_FSIZE": (limits.fsize_bytes, limits.fsize_bytes),
        "RLIMIT_NOFILE": (limits.nofile, limits.nofile),
        "RLIMIT_CORE": (0, 0),
    }
    clamped = {}
    for name, (soft, hard) in wanted.items():
        ceiling = resource.getrlimit(getattr(resource, name))[1]
        if ceiling != resource.RLIM_INFINITY:  # an unprivileged judge cannot raise a hard limit
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        clamped[name] = (soft, hard)
    return clamped


def run_program(
    source: str, limits: Limits | None = None, tests: dict[str, object] | None = None
) -> SandboxResult:
    """Run source in a fresh sandbox. Raises SandboxError if the sandbox itself cannot run.

    With `tests` (`rlguard.judges._code_checks.TestPlan.payload()`), two sandboxes run, each with
    its own uid: the source in one, answering calls; the tests in the other, calling it through
    a pipe pair and sending their checks back as `records` (see `_sandbox_wire`). Each has the
    whole `limits`; the result is the tests' side's, with the candidate's own end (a limit it hit,
    a signal) as the reason when that is what stopped the tests.
    """
    limits = limits or Limits()
    caps = capabilities()
    if caps.problem:
        raise SandboxError(caps.problem)
    if tests is None:
        with _slot(caps) as (uid, workdir):
            child = _spawn(source, {}, limits, caps, uid, workdir)
            return _finish(child, limits)
    with _slot(caps) as (tests_uid, tests_dir), _slot(caps) as (uid, workdir):
        return _run_pair(source, tests, limits, caps, (tests_uid, tests_dir), (uid, workdir))


@contextmanager
def _slot(caps: SandboxCapabilities) -> Iterator[tuple[int | None, str]]:
    """A uid of its own (as root) and a private workdir, cleaned up afterwards."""
    claim = host.claim_uid() if caps.dedicated_uids else nullcontext(None)
    with claim as uid, host.workdir(uid) as workdir:
        try:
            yield uid, workdir
        finally:  # what left the process group dies here or at the claim's end
            if uid is not None and not caps.namespaces:
                host.kill_all(uid)
                host.sweep_files(uid, host.temp_dirs())


@dataclass
class _Child:
    proc: subprocess.Popen[bytes]
    status_r: int
    payload: bytes
    nonce: str
    start: float

    def stop(self) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


def _spawn(
    source: str,
    role: dict[str, object],
    limits: Limits,
    caps: SandboxCapabilities,
    uid: int | None,
    workdir: str,
    fds: tuple[int, ...] = (),
) -> _Child:
    nonce = secrets.token_hex(16)
    status_r, status_w = os.pipe()
    cfg = _config(
        uid=uid,
        workdir=workdir,
        status_fd=status_w,
        nonce=nonce,
        source=source,
        namespaces=caps.namespaces,
        readonly_root=caps.readonly_root,
        pid_namespace=caps.pid_namespace,
        empty_root=caps.empty_root,
        import_through_fds=caps.import_through_fds,
        rlimits=_rlimits(limits, same_uid=uid is None),
        disk_bytes=limits.disk_bytes,
        **role,
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"}
    try:
        proc = subprocess.Popen(
            _command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_w, *fds),
            env=env,
            cwd="/",
            start_new_session=True,
        )
    except OSError as exc:
        os.close(status_r)
        raise SandboxError(f"cannot start the sandbox: {exc}") from exc
    finally:
        os.close(status_w)
    return _Child(proc, status_r, marshal.dumps(cfg), nonce, time.monotonic())


def _finish(child: _Child, limits: Limits) -> SandboxResult:
    """Feed the child its config, drain it until it ends (or its limits end it), clean up."""
    try:
        pumped = pump(
            child.proc,
            child.status_r,
            child.payload,
            deadline=child.start + limits.wall_s,
            output_limit=limits.output_bytes,
            keep=limits.tail_bytes,
            stop=child.stop,
        )
    finally:
        child.stop()  # also when pump itself failed
        os.close(child.status_r)
        _reap(child.proc)
    wall_s = time.monotonic() - child.start
    return _result(child.proc.returncode, pumped, limits, child.nonce, wall_s)


def _run_pair(
    source: str,
    tests: dict[str, object],
    limits: Limits,
    caps: SandboxCapabilities,
    tests_slot: tuple[int | None, str],
    slot: tuple[int | None, str],
) -> SandboxResult:
    calls_r, calls_w = os.pipe()
    answers_r, answers_w = os.pipe()
    serve = {"harness": _harness(_SERVE), "link": [calls_r, answers_w], "shared": tests["shared"]}
    children: list[_Child] = []
    try:
        children.append(
            _spawn(source, {"serve": serve}, limits, caps, *slot, fds=(calls_r, answers_w))
        )
        tests = {**tests, "harness": _harness(_TESTS), "link": [answers_r, calls_w]}
        children.append(
            _spawn("", {"tests": tests}, limits, caps, *tests_slot, fds=(answers_r, calls_w))
        )
    except BaseException:
        for child in children:
            child.stop()
            _finish(child, limits)
        raise
    finally:
        for fd in (calls_r, calls_w, answers_r, answers_w):
            os.close(fd)
    candidate, tester = children
    with ThreadPoolExecutor(1, thread_name_prefix="sandbox-candidate") as pool:
        candidate_end = pool.submit(_finish, candidate, limits)
        try:
            judged = _finish(tester, limits)
            ended_first = _ended(candidate.proc.pid)
        finally:
            candidate.stop()
        candidate_result = candidate_end.result()
    if judged.ok or not ended_first or candidate_result.ok:
        return judged
    return replace(judged, reason=candidate_result.reason, timed_out=candidate_result.timed_out)


def _ended(pid: int) -> bool:
    """Whether pid has ended (or was reaped already), without reaping it."""
    try:
        return exited(pid)
    except ChildProcessError:
        return True


@functools.cache
def _harness(path: str) -> bytes:
    """A side's harness after the wire both share, compiled once here (the sandbox runs this same
    interpreter; its uid may not even read these files)."""
    codes = []
    for name in (_WIRE, path):
        with open(name, encoding="utf-8") as f:
            codes.append(compile(f.read(), "harness", "exec", dont_inherit=True))
    return marshal.dumps(tuple(codes))


def _reap(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdout and proc.stderr
    proc.stdout.close()
    proc.stderr.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired as exc:  # SIGKILLed but stuck in the kernel
        raise SandboxError(f"sandbox pid {proc.pid} does not die") from exc


def _result(code: int, pumped: Pumped, limits: Limits, nonce: str, wall_s: float) -> SandboxResult:
    if not pumped.status.startswith(b"ready\n"):
        last = pumped.stderr.text().strip().splitlines()[-1:] or [f"exit code {code}"]
        raise SandboxError(f"sandbox setup failed ({pumped.cause}): {last[0]}")
    lines = pumped.status.decode("utf-8", errors="replace").split("\n")
    completed = lines[-2:] == [nonce, ""]
    # every whole line between "ready" and the nonce is a record: one the tests did not write
    # (forged, or a real one glued to stray bytes) is a bad record, never silently dropped;
    # blank lines carry nothing
    records = tuple(line for line in (lines[1:-2] if completed else lines[1:-1]) if line)
    if pumped.cause == "timeout":
        reason = f"timeout after {limits.wall_s:g} s"
    elif pumped.cause == "output":
        reason = f"output limit ({limits.output_bytes} bytes)"
    elif code < 0:
        reason = _SIGNALS.get(-code) or f"killed by {_signal_name(-code)}"
    elif code > 0:
        reason = f"exit code {code}"
    else:
        reason = "" if completed else "exited before the program finished (sys.exit/os._exit)"
    return SandboxResult(
        code,
        pumped.stdout.text(),
        pumped.stderr.text(),
        pumped.cause == "timeout",
        reason,
        wall_s,
        completed,
        records,
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
