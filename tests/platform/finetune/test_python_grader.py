"""The python grader: `grade(sample, item)` runs in the judges' sandbox, never in the server's
process. What it returns is the reward; a grade that raises, loops or returns no number is a 400
with the sandbox's reason; hostile graders (the judges' battery, reading the host's secrets,
the network, a fork bomb, a gigabyte of output) are contained and leave nothing behind."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from hostile_programs import ATTACKS, LIMITS, sandboxes_cleaned_up
from rlguard.judges import sandbox
from rlguard.judges.graders import python
from rlguard.judges.graders.base import GraderError
from rlguard.judges.graders.parse import parse_grader
from rlguard.judges.graders.templates import sample_of

BENIGN = "def grade(sample, item):\n    return 1.0"


@pytest.fixture(autouse=True)
def contained(monkeypatch) -> Iterator[None]:
    caps = sandbox.capabilities()
    if caps.problem:
        pytest.skip(caps.describe())
    monkeypatch.setattr(python, "LIMITS", LIMITS)  # the battery's 2.5 s, not a request's 10 s
    with sandboxes_cleaned_up(monkeypatch):
        yield


def grade(source: str, output: str = "", item: object = None) -> float:
    grader = parse_grader({"type": "python", "name": "py", "source": source})
    return grader.grade(sample_of(output), {} if item is None else item).reward


def refusal(source: str) -> str:
    with pytest.raises(GraderError) as refused:
        grade(source)
    assert (refused.value.status, refused.value.param) == (400, "grader.source")
    assert grade(BENIGN) == 1.0  # the server, and the next grade, carry on
    return refused.value.message


def test_grade_sees_the_sample_and_the_item() -> None:
    source = (
        "def grade(sample, item):\n"
        "    got = sample['output_json']['answer']\n"
        "    text = sample['output_text']\n"
        "    return (got == item['answer']) * item['weight'] + len(text) / 1000"
    )
    assert grade(source, '{"answer": 42}', {"answer": 42, "weight": 2}) == 2.014
    assert grade(source, '{"answer": 41}', {"answer": 42, "weight": 2}) == 0.014
    assert grade("def grade(s, i):\n    print('chatty')\n    return 3") == 3.0


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (
            "def grade(s, i):\n    return 1 / 0",
            "ZeroDivisionError: division by zero at source line 2",
        ),
        ("def grade(s, i):\n    return i['missing']", "KeyError: 'missing' at source line 2"),
        ("def grade(s, i):\n    while True:\n        pass", "timeout after 2.5 s|cpu time limit"),
        (
            "def grade(s, i):\n    return '1.0'",
            "must return a finite number (int or float), not str",
        ),
        ("def grade(s, i):\n    return None", "not NoneType"),
        ("def grade(s, i):\n    return True", "not bool"),
        ("def grade(s, i):\n    return float('inf')", "not inf"),
        ("import os\ndef grade(s, i):\n    os._exit(0)", "exited before the program finished"),
    ],
    ids=["raises", "key error", "loops", "a string", "None", "a bool", "infinity", "exits early"],
)
def test_a_failing_grade_is_a_400_with_the_sandboxes_reason(source: str, said: str) -> None:
    message = refusal(source)
    assert message.startswith("grader.source: ")
    assert any(part in message for part in said.split("|")), message


@pytest.mark.parametrize("name", ATTACKS)
def test_the_judges_hostile_battery_is_contained(name: str) -> None:
    code, expected = ATTACKS[name]
    message = refusal(f"{code}\n\n{BENIGN}")
    assert any(word in message for word in expected), message


def test_the_hosts_secrets_and_files_stay_out_of_reach(tmp_path) -> None:
    if not sandbox.capabilities().dedicated_uids:
        pytest.skip("the sandbox runs as the server's own uid here: not a boundary")
    secret = tmp_path / "platform.db"  # where the in-process platform keeps its store
    secret.write_text("tenant keys")
    source = f"""
def grade(sample, item):
    denied = 0
    for path in ("/etc/shadow", {str(secret)!r}):
        try:
            open(path).read()
        except OSError:
            denied += 1
    for path in ("/etc/passwd", "/usr/bin/python3"):
        try:
            open(path, "a").close()
        except OSError:
            denied += 1
    return denied
"""
    assert grade(source) == 4.0
    assert secret.read_text() == "tenant keys"


def test_no_network_reaches_the_host() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    with server:
        source = f"""
import socket
def grade(sample, item):
    try:
        socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), timeout=1).close()
        return 1.0
    except Exception:
        return 0.0
"""
        assert grade(source) == 0.0
        with pytest.raises(BlockingIOError):
            server.accept()
