"""Tenant B's job in the attack battery: tries each attack on tenant A's running job and on the
platform, and writes `{attack: {"blocked": bool, "detail": str}}` to attacks.json in its own
directory. What it aims at (the victim's paths, its host pid, Ray's port) is what an attacker
could guess or learn on a shared host; the test passes it in ATTACK_TARGETS. With argument
`disk` it only fills its own directory (the test expects it to be killed at its disk limit)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

T = json.loads(os.environ.get("ATTACK_TARGETS", "{}"))
HERE = Path(os.environ["RLGUARD_OUTPUT_DIR"]).parent
OWN_TOKEN = os.environ["RLGUARD_JOB_TOKEN"]


def read(path: str) -> str:
    with open(path, "rb") as f:
        return f"read {len(f.read(1 << 20))} bytes"


def read_victim_file():
    return read(T["victim_dir"] + "/weights.bin")


def write_victim_file():
    with open(T["victim_dir"] + "/weights.bin", "r+b") as f:
        f.write(b"owned")
    return "wrote the victim's weights"


def list_jobs():
    names = os.listdir(T["jobs_dir"])
    if names == [HERE.name]:
        raise PermissionError(f"sees only its own job: {names}")
    return f"listed {names}"


def read_store():
    return read(T["store"])


def write_store():
    with open(T["store"], "ab") as f:
        f.write(b"x")
    return "appended to the store"


def read_victim_log():
    return read(T["log"])


def read_victim_environ():
    return read(f"/proc/{T['victim_pid']}/environ")


def scan_environs_for_tokens():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            text = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            found += [t for t in re.findall(r"rlj_[A-Za-z0-9_-]+", text) if t != OWN_TOKEN]
    if not found:
        raise PermissionError("no other job's token in any /proc/*/environ it can read")
    return f"found tokens {found}"


def signal_victim():
    os.kill(T["victim_pid"], signal.SIGKILL)
    return "sent SIGKILL"


def ptrace_victim():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    if libc.ptrace(16, T["victim_pid"], None, None) == -1:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "attached"


def ray_control_plane():
    errors = []
    for host in ("127.0.0.1", T["host_ip"]):
        try:
            with socket.create_connection((host, T["ray_port"]), timeout=3):
                return f"connected to Ray's GCS port on {host}"
        except OSError as e:
            errors.append(f"{host}: {e}")
    raise ConnectionError("; ".join(errors))


def ray_token_file():
    return read(T["ray_token"])


def setuid_escalation():
    status = Path("/proc/self/status").read_text()
    done = subprocess.run(
        ["/usr/bin/su", "-c", "id -u", "root"], input="\n", capture_output=True, text=True
    )
    if os.geteuid() == 0 or done.stdout.strip() == "0" or "CapEff:\t0000000000000000" not in status:
        return f"root: su said {done.stdout!r}"
    if "NoNewPrivs:\t1" not in status:
        return "no_new_privs is off"
    raise PermissionError(f"su refused ({done.returncode}); uid {os.getuid()}, no caps, nnp")


def host_secrets():
    return read("/etc/shadow")


def planted_symlink():
    link = HERE / "to-victim"
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(T["victim_dir"] + "/secret.txt")
    return read(str(link))


def dotdot_escape():
    return read(str(HERE) + f"/../{Path(T['victim_dir']).name}/secret.txt")


def proc_root_escape():
    return read(f"/proc/{T['victim_pid']}/root{T['victim_dir']}/secret.txt")


def victim_tmp():
    Path("/tmp/attacker-was-here").write_text("x")
    return read("/tmp/victim-tmp-secret")


def other_tenants_mount():
    return read(T["a_checkpoint"])


def exhaust_memory():
    code = "b = bytearray(2 << 30); b[::4096] = b'x' * len(b[::4096]); print('allocated')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode == 0:
        return "allocated 2 GiB"
    raise MemoryError(f"the allocation was stopped (exit {done.returncode})")


def exhaust_pids():
    children = []
    try:
        for _ in range(400):
            children.append(subprocess.Popen(["sleep", "30"]))
    except OSError as e:
        raise OSError(f"fork failed after {len(children)} processes: {e}") from None
    finally:
        for child in children:
            child.kill()
            child.wait()
    return f"started {len(children)} processes"


ATTACKS = [
    read_victim_file,
    write_victim_file,
    list_jobs,
    read_store,
    write_store,
    read_victim_log,
    read_victim_environ,
    scan_environs_for_tokens,
    signal_victim,
    ptrace_victim,
    ray_control_plane,
    ray_token_file,
    setuid_escalation,
    host_secrets,
    planted_symlink,
    dotdot_escape,
    proc_root_escape,
    victim_tmp,
    other_tenants_mount,
    exhaust_memory,
    exhaust_pids,
]


def fill_disk() -> None:
    block = os.urandom(1 << 20)
    for i in range(100_000):
        with open(HERE / f"fill-{i}", "wb") as f:
            for _ in range(16):
                f.write(block)
        print(f"wrote {(i + 1) * 16} MiB", flush=True)
    time.sleep(60)


def main() -> None:
    if sys.argv[1:] == ["disk"]:
        fill_disk()
        return
    results = {}
    for attack in ATTACKS:
        try:
            results[attack.__name__] = {"blocked": False, "detail": attack()}
        except Exception as e:  # every refusal the OS gives counts as blocked
            results[attack.__name__] = {"blocked": True, "detail": f"{type(e).__name__}: {e}"}
    (HERE / "attacks.json").write_text(json.dumps(results, indent=1))
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)  # last: every process it can signal (its own, we expect)


if __name__ == "__main__":
    main()
