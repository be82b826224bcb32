"""The job sandbox's seccomp program (seccomp.py), read back and run on syscalls here: what a
job's syscall gets, without root or bubblewrap (test_sandbox_direct.py runs it in the sandbox)."""

from __future__ import annotations

import errno
import os
import platform
import struct

import pytest

from rlguard.platform import seccomp

X86_64 = 0xC000003E  # AUDIT_ARCH_X86_64
I386 = 0x40000003  # AUDIT_ARCH_I386
X32_BIT = 0x40000000
NR = {"clone": 56, "unshare": 272, "clone3": 435, "getpid": 39}
ALLOW, KILL_PROCESS = 0x7FFF0000, 0x80000000
SOCK_FILTER = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k


def errno_of(e: int) -> int:
    return 0x00050000 | e  # SECCOMP_RET_ERRNO


def run(program: bytes, nr: int, args: tuple[int, ...] = (), arch: int = X86_64) -> int:
    """The action `program` returns for a syscall: a classic-BPF interpreter of the few
    instructions libseccomp emits (loads of `struct seccomp_data`, AND, jumps, returns)."""
    words = struct.pack("=iIQ6Q", nr, arch, 0, *args, *[0] * (6 - len(args)))
    insns = [SOCK_FILTER.unpack_from(program, i) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = struct.unpack_from("=I", words, k)[0]
        elif code == 0x54:  # BPF_ALU | BPF_AND | BPF_K
            acc &= k
        elif code in (0x15, 0x25, 0x35, 0x45):  # BPF_JMP | JEQ, JGT, JGE, JSET with BPF_K
            test = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if test else jf
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"unexpected BPF instruction {code:#x}")


@pytest.fixture(scope="module")
def program() -> bytes:
    if platform.machine() != "x86_64":
        pytest.skip("the syscall numbers here are x86_64's")
    return seccomp.program()


def test_the_program_is_whole_instructions_built_once(program):
    assert len(program) > 0 and len(program) % SOCK_FILTER.size == 0
    assert seccomp.program() is program


def test_a_program_fd_reads_the_program_from_its_start(program):
    fd = seccomp.program_fd()
    try:
        assert os.read(fd, len(program) + 1) == program
    finally:
        os.close(fd)


def test_user_namespaces_are_refused_and_threads_and_forks_allowed(program):
    eperm = errno_of(errno.EPERM)
    thread = 0x3D0F00  # what glibc's pthread_create passes to clone
    assert run(program, NR["unshare"], (seccomp.CLONE_NEWUSER,)) == eperm
    assert run(program, NR["clone"], (seccomp.CLONE_NEWUSER | 0x11,)) == eperm
    assert run(program, NR["clone"], (thread,)) == ALLOW
    assert run(program, NR["clone"], (0x01200011,)) == ALLOW  # fork
    assert run(program, NR["unshare"], (0x400,)) == ALLOW  # CLONE_FILES
    assert run(program, NR["clone3"]) == errno_of(errno.ENOSYS)  # glibc falls back to clone


def test_every_denied_syscall_gets_eperm(program):
    import pyseccomp

    for name in seccomp.DENIED:
        nr = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
        assert run(program, nr) == errno_of(errno.EPERM), name
    assert run(program, NR["getpid"]) == ALLOW


def test_other_abis_kill_the_process(program):
    assert run(program, X32_BIT | NR["getpid"]) == KILL_PROCESS  # x32
    assert run(program, 20, arch=I386) == KILL_PROCESS  # i386's getpid, through int 0x80
