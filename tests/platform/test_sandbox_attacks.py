"""The job sandbox under attack: tenant B's jobs attack tenant A's running job and the platform.

One live platform (sandboxed, as `rlguard serve` runs by default) with tenants a and b. A's job
(sandbox_victim.py) writes its weights and a secret, reports an eval and waits. B's job
(sandbox_attacker.py) then tries every attack in its list and records each outcome; a second B
job fills its own directory past its disk limit; B's train configs name A's checkpoint. Each
attack is its own test: blocked. Then A's job is released: it finishes unharmed, its files
byte-identical. Without bubblewrap (or root) the battery is skipped, except in CI (CI=true),
where it fails instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_platform import LiveServer, require_sandbox

from rlguard.ports import unused_port

pytestmark = [pytest.mark.ray]

HERE = Path(__file__).resolve().parent
ATTACKS = [
    "read_victim_file",
    "write_victim_file",
    "list_jobs",
    "read_store",
    "write_store",
    "read_victim_log",
    "read_victim_environ",
    "scan_environs_for_tokens",
    "signal_victim",
    "ptrace_victim",
    "ray_control_plane",
    "ray_token_file",
    "setuid_escalation",
    "host_secrets",
    "planted_symlink",
    "dotdot_escape",
    "proc_root_escape",
    "victim_tmp",
    "other_tenants_mount",
    "exhaust_memory",
    "exhaust_pids",
]
DISK_MB = 64


def _wait_for(path: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.2)


def _pid_of(uid: int, marker: str) -> int:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode()
        except OSError:
            continue
        if f"Uid:\t{uid}\t" in status and marker in cmdline:
            return int(pid)
    raise AssertionError(f"no process of uid {uid} runs {marker}")


def _host_ip() -> str:
    """The host's address on its default route (where Ray's ports also listen), or loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _uid_of(path: Path) -> int:
    return path.stat().st_uid


@pytest.fixture(scope="module")
def battery(tmp_path_factory):
    require_sandbox("the sandbox battery")
    root = tmp_path_factory.mktemp("battery")
    a_models, shared = root / "a-models", root / "shared"
    a_models.mkdir()
    shared.mkdir()
    (a_models / "ckpt.safetensors").write_bytes(os.urandom(4096))
    (shared / "link-to-a").symlink_to(a_models)
    (shared / "data.jsonl").write_text('{"prompt": "p", "completion": "c"}\n')
    args = ["--gpus", "3", "--job-pids", "128", "--job-disk-mb", str(DISK_MB)]
    args += ["--mount", f"a/models={a_models}:ro", "--mount", f"shared={shared}:ro"]
    server = LiveServer(root / "platform", unused_port(), None, args)
    server.data_dir.mkdir()
    server.start()
    try:
        yield _run_battery(server, a_models, shared)
    finally:
        server.stop()


def _run_battery(server: LiveServer, a_models: Path, shared: Path) -> dict:
    _, key_a = server.tenant("a", quota_gpus=1)
    _, key_b = server.tenant("b", quota_gpus=2)
    a, b = server.client(key_a), server.client(key_b)
    victim = a.submit({"command": f"{sys.executable} {HERE / 'sandbox_victim.py'}", "gpus": 1})
    victim_dir = server.data_dir / "jobs" / victim["id"]
    _wait_for(victim_dir / "ready")
    snapshot = {n: (victim_dir / n).read_bytes() for n in ("weights.bin", "secret.txt")}
    uid = _uid_of(victim_dir)
    head = json.loads((server.data_dir / "ray-head.json").read_text())
    targets = {
        "victim_dir": str(victim_dir),
        "jobs_dir": str(server.data_dir / "jobs"),
        "store": str(server.data_dir / "platform.db"),
        "log": str(server.data_dir / "logs" / victim["id"] / "attempt-1.log"),
        "victim_pid": _pid_of(uid, "sandbox_victim.py"),
        "ray_port": int(head["address"].rsplit(":", 1)[1]),
        "host_ip": _host_ip(),
        "ray_token": str(server.data_dir / "ray-token"),
        "a_checkpoint": str(a_models / "ckpt.safetensors"),
    }
    attacker_cmd = f"{sys.executable} {HERE / 'sandbox_attacker.py'}"
    env = {"ATTACK_TARGETS": json.dumps(targets)}
    attacker = b.submit({"command": attacker_cmd, "gpus": 1, "env": env, "memory_mb": 512})
    b.wait(attacker["id"], timeout_s=300)
    with server.job_files(attacker["id"]) as attacker_dir:
        attacks = json.loads((attacker_dir / "attacks.json").read_text())
        attacker_uid = _uid_of(attacker_dir)
    filler = b.submit({"command": f"{attacker_cmd} disk", "gpus": 1})
    filled = b.wait(filler["id"], timeout_s=300)
    # what the job holds on the host: its volume's image (volume.py), whatever it hid inside
    filler_bytes = (server.data_dir / "volumes" / f"{filler['id']}.img").stat().st_blocks * 512
    configs = _config_attacks(server, key_b, a_models, shared)
    (victim_dir / "release").write_text("go")
    finished = a.wait(victim["id"], timeout_s=120)
    with server.job_files(victim["id"]) as victim_dir:
        verdict = json.loads((victim_dir / "verdict.json").read_text())
        victim_files = {n: (victim_dir / n).read_bytes() for n in snapshot}
    return {
        "attacks": attacks,
        "victim": finished,
        "verdict": verdict,
        "victim_files": victim_files,
        "snapshot": snapshot,
        "filler": filled,
        "filler_bytes": filler_bytes,
        "configs": configs,
        "victim_uid": uid,
        "attacker_uid": attacker_uid,
        "ray_address": head["address"],
    }


def _config_attacks(server, key_b, a_models: Path, shared: Path) -> dict:
    """B's train configs that name A's checkpoint: directly, through `..` from B's own mount,
    through a symlink in the shared mount. Each answer, as status and body."""
    paths = {
        "config_other_tenants_checkpoint": str(a_models / "ckpt.safetensors"),
        "config_dotdot": f"{shared}/../{a_models.name}/ckpt.safetensors",
        "config_symlink": f"{shared}/link-to-a/ckpt.safetensors",
        "config_platform_store": str(server.data_dir / "platform.db"),
    }
    answers = {}
    headers = {"Authorization": f"Bearer {key_b}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as c:
        for name, path in paths.items():
            config = {
                "stage": "sft",
                "model": {"path": path},
                "data": str(shared / "data.jsonl"),
                "output_dir": "out",
            }
            r = c.post("/v1/jobs", json={"config": config, "gpus": 1})
            answers[name] = {"status": r.status_code, "body": r.json(), "path": path}
    return answers


@pytest.mark.parametrize("attack", ATTACKS)
def test_each_attack_of_a_job_is_blocked(battery, attack):
    outcome = battery["attacks"][attack]
    assert outcome["blocked"], outcome["detail"]


def test_the_list_holds_every_attack_the_job_tried(battery):
    assert sorted(battery["attacks"]) == sorted(ATTACKS)
    assert len(ATTACKS) + 1 + 4 >= 15  # + the disk filler and the config attacks


def test_filling_the_disk_kills_the_filler_at_its_limit(battery):
    filler = battery["filler"]
    assert filler["status"] == "failed"
    assert filler["error"]["code"] == "resource_limit"
    assert "disk is full" in filler["error"]["message"]
    assert "enforced by the kernel" in filler["error"]["message"]
    assert battery["filler_bytes"] <= (DISK_MB << 20) * 1.01  # the kernel's limit: no overshoot


@pytest.mark.parametrize(
    "name",
    [
        "config_other_tenants_checkpoint",
        "config_dotdot",
        "config_symlink",
        "config_platform_store",
    ],
)
def test_a_config_path_outside_the_view_is_refused(battery, name):
    answer = battery["configs"][name]
    assert answer["status"] == 422, answer
    error = answer["body"]["error"]
    assert error["param"] == "config.model.path"
    assert answer["path"] in error["message"]
    assert "outside this job's view" in error["message"]


def test_the_victim_finishes_unharmed(battery):
    assert battery["victim"]["status"] == "succeeded", battery["victim"]["error"]
    assert battery["victim_files"] == battery["snapshot"]
    assert battery["verdict"] == {"files_intact": True, "tmp_intact": True, "tmp_planted": False}


def test_jobs_run_as_their_own_unprivileged_uids(battery):
    uids = battery["victim_uid"], battery["attacker_uid"]
    assert len(set(uids)) == 2
    assert all(u >= 2_000_000_000 for u in uids)
    assert battery["victim"]["sandbox"] == "bwrap"


def test_rays_control_plane_refuses_a_client_without_the_token(battery, tmp_path):
    """From the host itself (outside any sandbox), a Ray driver without the token is refused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["HOME"] = str(tmp_path)  # no ~/.ray/auth_token either
    code = f"import ray; ray.init(address={battery['ray_address']!r})"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode != 0
    assert "InvalidAuthToken" in done.stdout + done.stderr
