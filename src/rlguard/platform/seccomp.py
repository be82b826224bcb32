"""A job's seccomp filter: the syscalls its sandbox refuses, as a BPF program for `bwrap --seccomp`.

The job sandbox runs bwrap as real root without a user namespace (sandbox.py), so bwrap's own
`--disable-userns` is not available; this filter is what keeps a job from creating a user
namespace, in which it would hold every capability again and reach kernel code (mounts,
netfilter, ...) that an unprivileged user cannot. It is a denylist, default ALLOW, in the manner
of Flatpak's (flatpak `common/flatpak-run.c`, `setup_seccomp`, itself from linux-user-chroot and
Sandstorm); Docker's default profile (moby `profiles/seccomp/default.json`) is an allowlist that
leaves out every group below (some it grants a container given the matching capability, which a
job never has). Denied, with EPERM:

  * user namespaces: `unshare` and `clone` whose flags hold CLONE_NEWUSER (Flatpak; Docker denies
    every namespace flag). Other namespace flags, `setns` and mounts need CAP_SYS_ADMIN, which the
    job has nowhere once it cannot make a user namespace of its own;
  * changing the view: `setns`, `mount`, `umount2`, `pivot_root`, and the mount API of Linux 5.2+
    (`open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`), as
    both deny them (CVE-2021-41133 escaped Flatpak through that API);
  * the kernel keyring, which no namespace separates: `keyctl`, `add_key`, `request_key`
    (Docker);
  * kernel attack surface that an unprivileged user reaches and a training job does not need:
    `bpf`, `perf_event_open` (Flatpak: "the source of many CVEs"), `userfaultfd` (a stalling
    primitive of many kernel exploits), `io_uring_*` (Docker since moby#46762: a way around
    seccomp and the source of container escapes);
  * the host's own business: `kexec_load`, `kexec_file_load`, `init_module`, `finit_module`,
    `delete_module`, `acct`, `swapon`, `swapoff`, `reboot`, `syslog` (the kernel log),
    `lookup_dcookie`, `quotactl`, `quotactl_fd`, `name_to_handle_at`, `open_by_handle_at`
    (Docker; the last was the "shocker" container escape).

`clone3` gets ENOSYS, not EPERM: seccomp cannot read its flags (they are in memory), so it is
refused whole, and glibc then falls back to `clone`, whose flags the filter reads (Flatpak and
Docker do the same). Syscalls of other ABIs (i386 and x32 on x86_64) would pass a denylist
written for the native ABI's numbers, so they kill the process (the filter's bad-arch action);
Docker's profile likewise lists the architectures it admits.

Allowed on purpose: `ptrace` and `process_vm_*` (debuggers and profilers such as py-spy; the job's
uid and PID namespace confine them), NUMA placement (`mbind`, `set_mempolicy`, `move_pages`:
Flatpak denies them, but torch, NCCL and hwloc place memory with them), `personality` (it changes
only the caller), the TIOCSTI ioctl (a job has no terminal: its stdin is /dev/null, in a session
of its own), and what needs a capability anyway (`chroot`, `sethostname`, ...).

Built with libseccomp through `pyseccomp` (a ctypes binding to the system's libseccomp.so.2), once
per process.
"""

from __future__ import annotations

import errno
import os
import tempfile
from functools import cache

CLONE_NEWUSER = 0x10000000
DENIED = (
    *("setns", "mount", "umount2", "pivot_root"),
    *("open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
    *("keyctl", "add_key", "request_key"),
    *("bpf", "perf_event_open", "userfaultfd"),
    *("io_uring_setup", "io_uring_enter", "io_uring_register"),
    *("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
    *("acct", "swapon", "swapoff", "reboot", "syslog", "lookup_dcookie"),
    *("quotactl", "quotactl_fd", "name_to_handle_at", "open_by_handle_at"),
)


class SeccompUnavailable(RuntimeError):
    """libseccomp cannot be loaded on this host."""


@cache
def program() -> bytes:
    """The filter's BPF program (an array of 8-byte `struct sock_filter`)."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as e:
        raise SeccompUnavailable(
            f"libseccomp is not usable ({e}): apt-get install libseccomp2, pip install pyseccomp"
        ) from e
    scf = sc.SyscallFilter(sc.ALLOW)
    scf.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    eperm = sc.ERRNO(errno.EPERM)
    new_user = sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)  # flags: clone's first
    for name in ("unshare", "clone"):  # argument on x86_64 and aarch64 (not on s390)
        scf.add_rule(eperm, name, new_user)
    for name in DENIED:
        if sc.resolve_syscall(sc.Arch.NATIVE, name) >= 0:  # one this libseccomp and arch know
            scf.add_rule(eperm, name)
    scf.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        scf.export_bpf(out)
        out.seek(0)
        return out.read()


def program_fd() -> int:
    """A new file descriptor holding `program()`, at offset 0. bwrap reads it to its end, so each
    sandbox gets its own; the caller passes it to bwrap (`pass_fds`) and closes it after."""
    fd = os.memfd_create("rlguard-seccomp")
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
