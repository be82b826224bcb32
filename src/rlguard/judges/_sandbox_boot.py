"""The sandbox child: confines itself, then runs the untrusted program. A script, never imported.

`rlguard.judges.sandbox` starts this file with `python -I -S` and writes one config to its stdin,
in `marshal`'s format (this same interpreter's; json would cost its import of re, a third of a
run). Steps go in the order the kernel demands: namespaces and mounts while still root, then
rlimits, then no_new_privs and the switch to the sandbox uid, then the audit hook. Only after all
of that does it write "ready" on the status pipe and run the program, so a missing "ready" always
means the sandbox failed, never the program. After the program ends normally it writes the nonce,
so an early `sys.exit(0)` or `os._exit(0)` inside the program cannot pass as success.

In probe mode it tries each step once and writes which ones the host allows (marshal too).
"""

import builtins
import ctypes
import marshal
import os
import resource
import stat
import sys
from _signal import SIG_DFL, SIGKILL  # signal's module would import enum for the same ints
from _signal import signal as set_signal_handler

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1

# Events that reach outside the sandbox. Not a security boundary (a fresh interpreter started
# through _posixsubprocess has no hook); it only turns the obvious attempts into clean errors.
BLOCKED_EVENTS = frozenset(
    {
        "os.exec",
        "os.posix_spawn",
        "os.system",
        "subprocess.Popen",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
    }
)
BLOCKED_PREFIXES = ("socket.", "ctypes.")
# Routes from the candidate's code to the frames and objects of the bootstrap and the tests (the
# completion nonce, the tests' values and their checker): refused so a policy cannot read or
# rewrite the tests. sys._getframe raises ValueError, as when the stack is too shallow, which the
# stdlib's own callers (namedtuple, typing, enum, logging) already fall back on.
INTROSPECTION = frozenset(
    {
        "sys._current_frames",
        "sys.settrace",
        "sys.setprofile",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})

libc = ctypes.CDLL(None, use_errno=True)


def _call(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, options=None):
    def encode(s):
        return None if s is None else os.fsencode(s)

    _call(
        libc.mount(encode(source), encode(target), encode(fstype), flags, encode(options)),
        f"mount {target}",
    )


def enter_namespaces():
    """A new network namespace (only a down loopback) and a mount namespace nobody else sees."""
    _call(libc.unshare(CLONE_NEWNET | CLONE_NEWNS), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


# What a new root holds besides the interpreter's own dirs: the system's libraries (a link among
# them stays a link), the loader's cache and the few device files Python opens.
SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/dev/null", "/dev/zero", "/dev/urandom")


def enter_empty_root(expose, tmp_dirs):
    """Change root to a tmpfs that holds only the interpreter: its dirs and the system's library
    dirs bound in, a few files, empty mount points for /proc and the temp dirs. No checkout, no
    dataset, no file of the host's beyond those. The first temp dir is the tmpfs's mount point
    (in this mount namespace nobody else sees it); what is bound is opened first, so an
    interpreter under that dir is bound all the same."""
    links, opened = [], []
    for path in (*SYSTEM_DIRS, *expose, *SYSTEM_FILES):
        if os.path.islink(path) and path in SYSTEM_DIRS:
            links.append((path, os.readlink(path)))
        elif os.path.exists(path):
            opened.append((path, os.open(path, os.O_PATH), os.path.isdir(path)))
    root = tmp_dirs[0]
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for path, target in links:
        os.symlink(target, root + path)
    for path, fd, is_dir in opened:
        if is_dir:
            os.makedirs(root + path, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(root + path), 0o755, exist_ok=True)
            os.close(os.open(root + path, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount(f"/proc/self/fd/{fd}", root + path, None, MS_BIND | MS_REC)
        os.close(fd)
    for path in ("/proc", *tmp_dirs):
        os.makedirs(root + path, 0o755, exist_ok=True)
    os.chdir(root)
    os.chroot(".")
    os.chdir("/")


def enter_pid_namespace():
    """Processes started from here on see only each other (no other process's /proc entry)."""
    _call(libc.unshare(CLONE_NEWPID), "unshare pid")


def fork_into_pid_namespace(parent_pid):
    """Fork into the pid namespace, mount its own /proc, and go on as the program, pid 2 there.

    Three processes: this bootstrap stays outside, dies with the judge, and leaves as the
    program did (its exit code, or its signal); pid 1 inside reaps and reports the program's
    wait status to it on a pipe (the namespace's init ignores signals it has no handler for, so
    the program must not be init: SIGXCPU would not end it), then exits, which kills whatever
    the program left behind in the namespace."""
    bind_to_parent(parent_pid)
    report_r, report_w = os.pipe()
    if os.fork():
        os.close(report_w)
        reported = os.read(report_r, 32)
        os.wait()
        _leave_as(int(reported) if reported else None)
    os.close(report_r)
    _call(libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), "pdeathsig")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    program = os.fork()
    if program == 0:
        os.close(report_w)
        return
    while True:
        pid, status = os.wait()
        if pid == program:
            break
    os.write(report_w, str(status).encode())
    os._exit(0)


def _leave_as(status):
    """Exit as a process that ended with this wait status did (None: killed by SIGKILL)."""
    if status is not None and not os.WIFSIGNALED(status):
        os._exit(os.waitstatus_to_exitcode(status))
    number = SIGKILL if status is None else os.WTERMSIG(status)
    if number != SIGKILL:
        set_signal_handler(number, SIG_DFL)
    os.kill(os.getpid(), number)
    os._exit(128 + number)  # a signal whose default is to go on


def make_root_readonly():
    attr = (ctypes.c_uint64 * 4)(MOUNT_ATTR_RDONLY, 0, 0, 0)
    _call(
        libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, b"/", AT_RECURSIVE, attr, ctypes.sizeof(attr)),
        "read-only /",
    )


def _closed_ancestor(path):
    """The first ancestor of path that others cannot traverse (e.g. /root), or None."""
    parts = path.strip("/").split("/")[:-1]
    for i in range(len(parts)):
        ancestor = "/" + "/".join(parts[: i + 1])
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor
    return None


def expose_interpreter(dirs):
    """Hide closed ancestors (like /root) behind an empty tmpfs, re-mounting only the interpreter.

    The sandbox uid must read the stdlib even when Python lives under /root; everything else
    under that ancestor stays invisible.
    """
    plan = [(d, _closed_ancestor(d)) for d in dirs]
    plan = [(d, os.open(d, os.O_PATH | os.O_DIRECTORY), hidden) for d, hidden in plan if hidden]
    for hidden in sorted({hidden for _, _, hidden in plan}):
        _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
    for d, fd, _ in plan:
        os.makedirs(d, 0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", d, None, MS_BIND | MS_REC)
        os.close(fd)


def import_through_fds():
    """Without a mount namespace, keep a stdlib under a closed dir importable after the uid switch.

    Each sys.path dir is opened while still root and replaced by /proc/self/fd/N, which leads
    into the dir without traversing its closed ancestors (nothing else under them opens up).
    Packages already imported get the same replacement in their __path__.
    """
    moved = {}
    for i, entry in enumerate(sys.path):
        if os.path.isdir(entry):
            moved[entry] = f"/proc/self/fd/{os.open(entry, os.O_PATH | os.O_DIRECTORY)}"
            sys.path[i] = moved[entry]
    for module in list(sys.modules.values()):
        path = getattr(module, "__path__", None)
        if isinstance(path, list):
            path[:] = [_moved(p, moved) for p in path]


def _moved(path, moved):
    for old, new in moved.items():
        if path == old or path.startswith(old + "/"):
            return new + path[len(old) :]
    return path


def private_tmp(dirs, size):
    """One size-capped, noexec tmpfs shown at every world-writable temp dir."""
    first, *rest = dirs
    _mount("tmpfs", first, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"mode=1777,size={size}")
    for d in rest:
        _mount(first, d, None, MS_BIND)


def apply_rlimits(rlimits):
    for name, (soft, hard) in rlimits.items():
        resource.setrlimit(getattr(resource, name), (soft, hard))


def drop_privileges(uid):
    _call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (uid, uid, uid):
            raise OSError(f"still not uid {uid}")


def bind_to_parent(parent_pid):
    """No core dumps, and die with the parent (the setting only survives after the uid switch);
    `parent_pid`, when given, must still be the parent (the judge has not exited meanwhile)."""
    _call(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")
    _call(libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), "pdeathsig")
    if parent_pid is not None and os.getppid() != parent_pid:
        raise OSError("the judge exited before the sandbox started")


def audit_hook(frames=False, getpid=os.getpid, fsdecode=os.fsdecode, basename=os.path.basename):
    """The audit hook, a closure over everything it reads: the bootstrap's module is out of the
    program's reach (run() replaces sys.modules["__main__"]) and rebinding os's functions or
    these sets later changes nothing here. Setting any function's `__code__` is refused, so the
    hook cannot be rewritten in place even by a program that found it. With `frames`, frames and
    tracing stay open: the candidate's own sandbox holds nothing of the tests' to reach."""
    blocked, frame_attributes = BLOCKED_EVENTS, frozenset() if frames else FRAME_ATTRIBUTES
    introspection = frozenset() if frames else INTROSPECTION
    prefixes, str_or_bytes, isinstance_ = BLOCKED_PREFIXES, (str, bytes), isinstance

    def memory(path):
        """A process's memory file (/proc/self/mem, or "mem" relative to a /proc dir)."""
        return isinstance_(path, str_or_bytes) and basename(fsdecode(path)) == "mem"

    def foreign_proc(path):
        """/proc/<pid>/... of another process, by the literal path (a relative path slips
        past)."""
        if not isinstance_(path, str_or_bytes):
            return False
        parts = fsdecode(path).split("/")
        return (
            parts[:2] == ["", "proc"]
            and len(parts) > 2
            and parts[2].isdigit()
            and (int(parts[2]) != getpid())
        )

    def hook(event, args):
        if event == "sys._getframe" and not frames:
            raise ValueError("sandbox: frames are not available")
        if event == "object.__getattr__" and args[1] in frame_attributes:
            raise PermissionError(f"sandbox: {args[1]} is not allowed")
        if event == "object.__setattr__" and args[1] == "__code__":
            raise PermissionError("sandbox: setting __code__ is not allowed")
        if event in blocked or event in introspection or event.startswith(prefixes):
            raise PermissionError(f"sandbox: {event} is not allowed")
        if event == "open" and (foreign_proc(args[0]) or memory(args[0])):
            raise PermissionError("sandbox: other processes' /proc entries are not allowed")

    return hook


def confine(cfg):
    in_pid_namespace = cfg["namespaces"] and cfg["pid_namespace"]
    if cfg["namespaces"]:
        enter_namespaces()
        if cfg["empty_root"]:
            enter_empty_root(cfg["expose"], cfg["tmp_dirs"])
        if in_pid_namespace:
            enter_pid_namespace()
            fork_into_pid_namespace(cfg["parent_pid"])
        if cfg["readonly_root"]:
            make_root_readonly()
        if not cfg["empty_root"]:  # else the interpreter's dirs are all there is
            expose_interpreter(cfg["expose"])
        private_tmp(cfg["tmp_dirs"], cfg["disk_bytes"])
        os.makedirs(cfg["workdir"], 0o700, exist_ok=True)
        if cfg["uid"] is not None:
            os.chown(cfg["workdir"], cfg["uid"], cfg["uid"])
    elif cfg["import_through_fds"]:
        import_through_fds()
    apply_rlimits(cfg["rlimits"])
    drop_privileges(cfg["uid"])
    # in a pid namespace the parent is the bootstrap outside it, whose pid reads as 0 here
    bind_to_parent(None if in_pid_namespace else cfg["parent_pid"])
    os.chdir(cfg["workdir"])
    os.umask(0o077)
    sys.addaudithook(audit_hook(frames="serve" in cfg))


def run(source, nonce, status_fd, tests=None, serve=None):
    """The program alone; or, with `tests`, the tests' side of a judged program (the program runs
    in another sandbox, `serve`'s, which answers the tests' calls)."""
    write = os.write
    write(status_fd, b"ready\n")
    sys.argv = ["program.py"]
    sys.modules["__main__"] = type(sys)("__main__")  # the bootstrap's globals, out of reach
    role = tests if tests is not None else serve
    if role is None:
        exec(
            compile(source, "program.py", "exec"),
            {"__name__": "__main__", "__builtins__": builtins},
        )
    else:  # the harness, loaded with a copy of the real builtins as its own
        harness = {"__name__": "rlguard_sandbox_harness", "__builtins__": dict(vars(builtins))}
        for code in marshal.loads(role.pop("harness")):
            exec(code, harness)
        if tests is not None:
            harness["run"](tests, status_fd)
        else:
            harness["serve"](source, serve)
    sys.stdout.flush()
    sys.stderr.flush()
    write(status_fd, nonce.encode() + b"\n")


def _attempt(step, *args):
    try:
        step(*args)
    except OSError:
        return False
    return True


def probe(cfg):
    """Which steps this host allows; each later step runs only if the earlier ones held."""
    got = {"namespaces": _attempt(enter_namespaces)}
    through_fd = f"/proc/self/fd/{os.open(cfg['stdlib'], os.O_PATH | os.O_DIRECTORY)}"
    got["stdlib_through_fd"] = os.access(through_fd, os.R_OK | os.X_OK)  # before any new root
    got["empty_root"] = got["namespaces"] and _attempt(
        enter_empty_root, cfg["expose"], cfg["tmp_dirs"]
    )
    got["readonly_root"] = got["namespaces"] and _attempt(make_root_readonly)
    got["pid_namespace"] = got["namespaces"] and _attempt(enter_pid_namespace)
    if not got["empty_root"]:
        got["namespaces"] = got["namespaces"] and _attempt(expose_interpreter, cfg["expose"])
    got["namespaces"] = got["namespaces"] and _attempt(private_tmp, cfg["tmp_dirs"], 1 << 20)
    got["uid"] = _attempt(drop_privileges, cfg["uid"])
    got["stdlib_readable"] = os.access(cfg["stdlib"], os.R_OK | os.X_OK)
    return got


def main():
    os.umask(0o022)
    cfg = marshal.loads(sys.stdin.buffer.read())  # the host's, before any untrusted code
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    if cfg["probe"]:
        sys.stdout.buffer.write(marshal.dumps(probe(cfg)))
        return
    confine(cfg)
    run(
        cfg.pop("source"),
        cfg.pop("nonce"),
        cfg["status_fd"],
        cfg.pop("tests", None),
        cfg.get("serve"),
    )


if __name__ == "__main__":
    main()
