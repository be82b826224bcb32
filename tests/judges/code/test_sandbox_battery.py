"""The sandbox against hostile programs.

Each attack runs through CodeJudge in one batch with a correct sample: the attack must score 0
within its limits while the correct sample still scores 1, the test process (the judge) survives,
nothing outside the sandbox changes, and no sandbox process is left behind. Protections that hold
only on some hosts (a dedicated uid as root, namespaces) are tested where the probe says they hold
and skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from hostile_programs import ATTACKS, LIMITS, sandboxes_cleaned_up
from rlguard.judges import sandbox
from rlguard.judges.code import CodeJudge
from rlguard.judges.sandbox import run_program

BUDGET_S = LIMITS.wall_s + 2.0  # the attack's limit, plus starting and cleaning up two sandboxes
CONTROL = "```python\ndef add(a, b):\n    return a + b\n```"
TESTS = "assert add(1, 2) == 3"


@pytest.fixture(scope="module")
def caps() -> sandbox.SandboxCapabilities:
    found = sandbox.capabilities()
    if found.problem:
        pytest.skip(found.describe())
    return found


@pytest.fixture(scope="module")
def judge(caps) -> CodeJudge:
    return CodeJudge(LIMITS, max_workers=2)


@pytest.fixture(autouse=True)
def nothing_left_behind(monkeypatch) -> Iterator[None]:
    """After each test, no process of a sandbox this test started may be alive."""
    with sandboxes_cleaned_up(monkeypatch):
        yield


def attack(judge: CodeJudge, code: str) -> str:
    """Run code (with the unit tests after it) beside a correct sample; the attack's reason."""
    start = time.monotonic()
    verdicts = judge.evaluate(
        ["p", "p"], [f"```python\n{code}\n```", CONTROL], [{"unit_tests": TESTS}] * 2
    )
    elapsed = time.monotonic() - start
    assert verdicts[1].value == 1, verdicts[1]
    assert verdicts[0].value == 0, verdicts[0]
    assert elapsed < BUDGET_S
    return verdicts[0].reason


@pytest.mark.parametrize("name", ATTACKS)
def test_attack_scores_zero_and_spares_its_neighbour(judge, name):
    code, expected = ATTACKS[name]
    reason = attack(judge, code)
    assert any(word in reason for word in expected), reason


def test_process_count_is_capped_per_sandbox(caps):
    if not caps.dedicated_uids:
        pytest.skip("same uid: RLIMIT_NPROC counts all of the user's processes")
    program = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
        children += 1
except OSError as exc:
    print(children, exc.errno)
"""
    result = run_program(program, LIMITS)
    children, _ = result.stdout_tail.split()
    assert int(children) == LIMITS.nproc - 1  # the bootstrap is the first process


def test_a_grandchild_that_left_the_process_group_is_killed_too(caps):
    if not caps.dedicated_uids:
        pytest.skip("same uid: a setsid grandchild escapes the group kill (documented)")
    program = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
    result = run_program(program + "print(os.getpid())", LIMITS)
    assert result.ok  # the autouse check finds the grandchild by uid if it survived


def test_writes_outside_its_dir_leave_no_trace(judge, caps, tmp_path):
    if not caps.dedicated_uids:
        pytest.skip("same uid: the program can write wherever the user can (documented)")
    tag = uuid.uuid4().hex
    targets = [
        str(tmp_path / "evil"),
        f"/tmp/rlguard-evil-{tag}",
        f"/var/tmp/rlguard-evil-{tag}",
        f"/dev/shm/rlguard-evil-{tag}",
        os.path.join(os.getcwd(), f"rlguard-evil-{tag}"),
        os.path.expanduser(f"~/rlguard-evil-{tag}"),
    ]
    program = f"""
import os
for path in {targets!r}:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("pwned")
    except OSError:
        pass
assert all(os.path.exists(p) for p in {targets!r}), "some writes failed"
"""
    try:
        attack(judge, program)
    finally:
        escaped = [t for t in targets if os.path.exists(t)]
        for path in escaped:
            os.unlink(path)
    assert escaped == []


@pytest.fixture
def secret(monkeypatch) -> Iterator[tuple[str, int]]:
    """A secret in the judge's env, and a process whose /proc/<pid>/environ holds it."""
    value = f"rlguard-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("RLGUARD_TEST_SECRET", value)
    holder = subprocess.Popen(["sleep", "60"], env=dict(os.environ))
    try:
        yield value, holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=5)


def test_secrets_of_the_judge_do_not_leak(judge, secret):
    value, holder = secret
    program = f"""
import os
seen = [os.environ.get("RLGUARD_TEST_SECRET", "")]
for pid in [os.getppid(), {holder}, *filter(str.isdigit, os.listdir("/proc"))]:
    try:
        with open(f"/proc/{{pid}}/environ", "rb") as f:
            seen.append(f.read().decode(errors="replace"))
    except OSError:
        pass
assert any({value!r} in s for s in seen), "no secret found"
"""
    assert "no secret found" in attack(judge, program)


def test_proc_of_other_processes_is_closed_without_the_hook(caps, secret):
    if not caps.dedicated_uids:
        pytest.skip("same uid: /proc/<pid>/environ of the user's processes is readable")
    value, holder = secret
    program = f"""
import os
try:  # a relative path slips past the audit hook; the pid namespace or the uid must stop it
    os.chdir("/proc/{holder}")
    print(open("environ", "rb").read())
except OSError as exc:
    print("denied", exc.errno)
"""
    result = run_program(program, LIMITS)
    # not there at all in a pid namespace (ENOENT), else not readable by the uid (EACCES)
    denied = errno.ENOENT if caps.pid_namespace else errno.EACCES
    assert f"denied {denied}" in result.stdout_tail and value not in result.stdout_tail


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    try:
        yield server
    finally:
        server.close()


def assert_no_connection(server: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        server.accept()


def test_no_network(judge, listener):
    port = listener.getsockname()[1]
    program = f"""
import socket
errors = []
for address in [("127.0.0.1", {port}), ("8.8.8.8", 53)]:
    try:
        socket.create_connection(address, timeout=1).close()
        errors.append(None)
    except Exception as exc:
        errors.append(repr(exc))
assert None in errors, errors
"""
    attack(judge, program)
    assert_no_connection(listener)


# A spawned interpreter has no audit hook (multiprocessing starts it through _posixsubprocess,
# which raises no audit event): only kernel-level protections are left in it. It runs the base
# interpreter, not sys.executable, and does not re-run the bootstrap script: a checkout under
# /tmp (a fresh clone in CI) is hidden by the sandbox's private /tmp.
BASE_PYTHON = os.path.realpath(sys.executable)
WITHOUT_HOOK = """
import multiprocessing, sys
multiprocessing.set_executable({python!r})
sys.modules["__main__"].__dict__.pop("__file__", None)
process = multiprocessing.get_context("spawn").Process(target=exec, args=({code!r},))
process.start()
process.join(10)
"""


def test_network_namespace_holds_without_the_hook(caps, listener):
    if not caps.namespaces:
        pytest.skip("no network namespace on this host: only the audit hook blocks sockets")
    port = listener.getsockname()[1]
    code = (
        "import socket; print('hookless', flush=True); "
        f"socket.create_connection(('127.0.0.1', {port}), 1); print('connected', flush=True)"
    )
    result = run_program(WITHOUT_HOOK.format(code=code, python=BASE_PYTHON), LIMITS)
    assert "hookless" in result.stdout_tail and "connected" not in result.stdout_tail
    assert "Network is unreachable" in result.stderr_tail
    assert_no_connection(listener)


def test_the_program_cannot_kill_the_judge(judge):
    program = """
import os, signal
for kill in (lambda: os.kill(os.getppid(), signal.SIGKILL),
             lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)):
    try:
        kill()
    except Exception:
        pass
raise SystemExit(1)
"""
    attack(judge, program)  # returning at all means this process survived


def test_the_sandbox_uid_cannot_kill_the_judge_without_the_hook(caps):
    if not caps.dedicated_uids:
        pytest.skip("same uid: a hookless interpreter could signal the judge (documented)")
    if caps.import_through_fds:
        pytest.skip("the sandbox uid cannot exec the interpreter here: no hookless one to test")
    me = os.getpid()
    code = (
        f"import os, signal; print('hookless', flush=True); os.kill({me}, signal.SIGKILL); "
        f"os.killpg(os.getpgid({me}), signal.SIGKILL)"
    )
    result = run_program(WITHOUT_HOOK.format(code=code, python=BASE_PYTHON), LIMITS)
    # no such process in a pid namespace, else not the uid's to signal
    refused = "ProcessLookupError" if caps.pid_namespace else "PermissionError"
    assert "hookless" in result.stdout_tail and refused in result.stderr_tail


def test_printing_a_gigabyte_costs_the_judge_nothing():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_program("while True:\n    print('x' * 10**6)", LIMITS)
    assert result.reason == f"output limit ({LIMITS.output_bytes} bytes)"
    assert result.wall_s < LIMITS.wall_s
    assert len(result.stdout_tail.encode()) <= LIMITS.tail_bytes
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 32 * 1024  # KiB


def test_environment_and_working_dir_are_private(caps):
    program = """
import json, os
print(json.dumps({"env": dict(os.environ), "cwd": os.getcwd(), "uid": os.getuid(),
                  "mode": os.stat(".").st_mode & 0o777}))
"""
    result = run_program(program, LIMITS)
    seen = json.loads(result.stdout_tail)
    cwd = seen["cwd"]
    expected = {"PATH": "/usr/bin:/bin", "HOME": cwd, "TMPDIR": cwd, "LANG": "C.UTF-8"}
    assert seen["env"] == expected and seen["mode"] == 0o700
    assert not os.path.exists(cwd)
    assert (seen["uid"] != os.getuid()) == caps.dedicated_uids


def test_describe_says_what_holds(caps):
    text = sandbox.describe()
    assert ("dedicated uid" in text) == caps.dedicated_uids


def test_the_audit_hook_is_out_of_reach_and_reads_nothing_the_program_can_rebind():
    source = (
        "import os, sys\n"
        "print(vars(sys.modules['__main__']).keys() <= {'__name__', '__doc__', '__package__',"
        " '__loader__', '__spec__'})\n"
        "def f():\n    pass\n"
        "try:\n    f.__code__ = (lambda: 1).__code__\n    print('set')\n"
        "except PermissionError:\n    print('refused')\n"
        "os.getpid = os.getppid  # the hook compares /proc/<pid> with its own getpid\n"
        "try:\n    open(f'/proc/{os.getppid()}/cmdline').read()\n    print('opened')\n"
        "except PermissionError:\n    print('refused')\n"
    )
    result = run_program(source, LIMITS)
    assert result.ok, result.reason
    assert result.stdout_tail.split() == ["True", "refused", "refused"]


def test_nothing_of_the_host_is_in_sight_beyond_the_interpreter_and_its_libraries(caps):
    if not caps.empty_root:
        pytest.skip("no empty root on this host: the filesystem is read-only but visible")
    program = (
        "import os, sys\n"
        f"print(os.path.exists({__file__!r}), os.path.exists('/etc/passwd'),"
        f" os.path.isdir({os.path.realpath(sys.base_prefix)!r}), os.path.isdir('/usr/lib'))\n"
    )
    result = run_program(program, LIMITS)
    assert result.stdout_tail.split() == ["False", "False", "True", "True"], result
