"""Tenant B's job in the resource battery (with `victim`, tenant A's): one attack on what the
platform does outside the sandbox on a job's behalf (its watcher, its store, its logs, its disk,
its socket), chosen by the first argument. It prints `RESULT {json}` with what it saw, when it
still can, then sleeps until it is stopped. tests/platform/test_resource_attacks.py runs each
and checks the platform's answer; benchmarks/bench_hostile_tenant.py times tenant A's requests
meanwhile."""

from __future__ import annotations

import concurrent.futures
import ctypes
import itertools
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from rlguard.platform.client import JobReporter, PlatformError, TransportError

MiB = 1 << 20
OUT = Path(os.environ["RLGUARD_OUTPUT_DIR"])
HOME = OUT.parent
reporter = JobReporter.from_env()
assert reporter is not None


def result(**seen: object) -> None:
    print("RESULT " + json.dumps(seen), flush=True)


def fallocate(fd: int, size: int) -> str:
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as e:
        return os.strerror(e.errno)
    return "allocated"


def hostile_lines() -> None:
    """Lines a backtracking regex would never finish: a's then a b, and an eval now and then
    (the watch's regex is `(?P<score>(?:a+)+)$`-like, see the test); slowly enough not to
    fill the job's disk before it is cancelled."""
    for step in range(1, 100_000):
        if step % 10 == 0:  # again and again: the long lines push it out of a log's tail
            result(lines=2 * step)
        print("a" * 20_000 + "b", flush=True)
        print(f"step {step} acc 0.{step % 10}", flush=True)
        time.sleep(0.5)


def trainer_state() -> None:
    """A 24 MiB trainer_state.json, touched again and again (each touch a new version)."""
    state = HOME / "checkpoint-1" / "trainer_state.json"
    state.parent.mkdir(exist_ok=True)
    history = [{"step": s, "eval_loss": 1.0, "pad": "x" * 200} for s in range(100_000)]
    state.write_text(json.dumps({"log_history": history}))
    result(bytes=state.stat().st_size)
    while True:
        os.utime(state)
        time.sleep(0.1)


def warnings() -> None:
    """101 warnings of 1 MiB of data, then small ones until the store says no."""
    big = {}
    for _ in range(101):
        try:
            reporter.warning("flood", "x", {"blob": "y" * (MiB - 100)})
            big["stored"] = big.get("stored", 0) + 1
        except PlatformError as e:
            big[str(e.status)] = big.get(str(e.status), 0) + 1
    small, refused = 0, None
    while refused is None and small < 200_000:
        try:
            reporter.warning("flood", "z" * 1900, {"i": small})
            small += 1
        except PlatformError as e:
            refused = f"{e.status} {e.code}"
    result(big=big, small_stored=small, refused=refused)


NEAR_LIMIT = 60 * MiB
"""Past what a 64 MiB volume holds, below the 64 MiB any one file may reach (RLIMIT_FSIZE,
which refuses a larger one with EFBIG before the filesystem is asked)."""


def fallocate_stdout() -> None:
    result(first="before")
    result(stdout=fallocate(1, NEAR_LIMIT))


def unlinked_file() -> None:
    f = open(HOME / "hidden", "wb")  # noqa: SIM115 (held open on purpose)
    os.unlink(HOME / "hidden")
    written = 0
    try:
        while True:
            f.write(b"\0" * MiB)
            f.flush()
            written += MiB
    except OSError as e:
        result(written=written, error=os.strerror(e.errno))


def burst() -> None:
    """One call past the limit (refused by RLIMIT_FSIZE), then one past the volume's room."""
    fd = os.open(HOME / "burst", os.O_CREAT | os.O_WRONLY)
    result(gib=fallocate(fd, 1 << 30))
    result(burst=fallocate(fd, NEAR_LIMIT))


def binary_log() -> None:
    sys.stdout.buffer.write((b"\xff" * 1023 + b"\n") * 6 * 1024)  # 6 MiB of non-UTF-8
    sys.stdout.flush()
    result(printed=6 * MiB)


def userns() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    code = libc.unshare(0x10000000)  # CLONE_NEWUSER
    result(unshare=code, errno=os.strerror(ctypes.get_errno()) if code else None)


def connections() -> None:
    """Connections to the platform's socket, held open: how many reach the server."""
    held, answered = [], 0
    for _ in range(64):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(os.environ["RLGUARD_SOCKET"])
        held.append(s)
    for s in held:
        try:
            s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n")
            answered += bool(s.recv(16))
        except OSError:
            pass
    result(connections=len(held), answered=answered)


def report_flood() -> None:
    """Step reports from 4 threads as fast as the server answers, until one is refused (or 60 s):
    how long that takes depends on how fast a loaded server stores them, not on a fixed window."""
    codes: dict[str, int] = {}
    deadline = time.monotonic() + 60
    steps = itertools.count(1)
    lock = threading.Lock()

    def flood() -> None:
        while time.monotonic() < deadline and "429" not in codes:
            response = reporter.http.post(
                f"/v1/jobs/{reporter.job_id}/steps", json={"step": next(steps), "step_s": 1.0}
            )
            with lock:
                codes[str(response.status_code)] = codes.get(str(response.status_code), 0) + 1

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: flood(), range(4)))
    result(codes=codes)


def checkpoint_flood() -> None:
    """Many checkpoint reports at once, each a distinct step: what the server makes of them."""
    ckpt = OUT / "ckpt"
    ckpt.mkdir(exist_ok=True)
    (ckpt / "weights.bin").write_bytes(os.urandom(MiB))

    def report(step: int) -> str:
        try:
            response = reporter.http.post(
                f"/v1/jobs/{reporter.job_id}/checkpoints",
                json={"step": step, "path": str(ckpt)},
                timeout=300,
            )
        except TransportError:  # past the socket's connections at once: dropped
            return "dropped"
        return str(response.status_code)

    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        codes = list(pool.map(report, range(1, 65)))
    result(codes={c: codes.count(c) for c in set(codes)})


def victim() -> None:
    """Tenant A's job: an eval every 0.2 s (steps 1, 2, ...), each printed with when it was
    sent and how long its answer (the stop rule's decision) took, until `release` appears in
    its directory; then exit 0."""
    step = 0
    while not (HOME / "release").exists():
        step += 1
        sent = time.time()
        reporter.eval(step, 0.5 + 0.0001 * step, 0.0, loss=1.0 / step)
        print(f"EVAL {sent:.3f} {step} {1000 * (time.time() - sent):.1f}", flush=True)
        time.sleep(0.2)
    result(evals=step)
    sys.exit(0)


ATTACKS = {
    f.__name__: f
    for f in (
        victim,
        hostile_lines,
        trainer_state,
        warnings,
        fallocate_stdout,
        unlinked_file,
        burst,
        binary_log,
        userns,
        connections,
        report_flood,
        checkpoint_flood,
    )
}

if __name__ == "__main__":
    ATTACKS[sys.argv[1]]()
    while True:  # until stopped: its end is the platform's to decide
        time.sleep(1)
