"""The code judge runs a program once: repeats (same setup, code and tests) reuse the verdict."""

import rlguard.judges.code as code_module
from rlguard.judges.code import CodeJudge

TESTS = {"unit_tests": "assert add(1, 2) == 3"}
RIGHT = "Sure.\n```python\ndef add(a, b):\n    return a + b\n```"
SAME_PROGRAM = (
    "Here it is, with other words around it.\n```python\ndef add(a, b):\n    return a + b\n```"
)
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"


def counting(monkeypatch):
    calls = []
    real = code_module.run_program

    def run(source, limits, tests=None):
        calls.append(source)
        return real(source, limits, tests)

    monkeypatch.setattr(code_module, "run_program", run)
    return calls


def test_a_repeated_program_is_not_run_again(monkeypatch):
    calls = counting(monkeypatch)
    judge = CodeJudge(max_workers=1)
    first = judge.judge(["p"] * 3, [RIGHT, SAME_PROGRAM, WRONG], [TESTS] * 3)
    again = judge.judge(["p"] * 2, [RIGHT, WRONG], [TESTS] * 2)
    assert first == [1, 1, 0] and again == [1, 0]
    assert len(calls) == 2


def test_the_cache_is_bounded_and_forgets_the_oldest(monkeypatch):
    calls = counting(monkeypatch)
    judge = CodeJudge(max_workers=1, cache_size=1)
    judge.judge(["p"] * 3, [RIGHT, WRONG, RIGHT], [TESTS] * 3)
    assert len(calls) == 3


def test_other_tests_are_another_program(monkeypatch):
    calls = counting(monkeypatch)
    judge = CodeJudge(max_workers=1)
    verdicts = judge.judge(
        ["p"] * 2, [RIGHT, RIGHT], [TESTS, {"unit_tests": "assert add(1, 1) == 3"}]
    )
    assert verdicts == [1, 0] and len(calls) == 2


def test_another_setup_is_another_program_even_where_the_candidate_sees_none_of_it(monkeypatch):
    calls = counting(monkeypatch)
    judge = CodeJudge(max_workers=1)
    rows = [{"unit_tests": "assert add(1, 2) == WANT", "setup": f"WANT = {n}"} for n in (3, 4)]
    assert judge.judge(["p"] * 2, [RIGHT, RIGHT], rows) == [1, 0] and len(calls) == 2
