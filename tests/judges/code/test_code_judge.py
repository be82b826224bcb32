"""CodeJudge: which code block is judged, verdicts with reasons, and judge failures (-1)."""

from __future__ import annotations

import errno

import pytest

from rlguard.judges import sandbox
from rlguard.judges.code import CodeJudge, extract_code
from rlguard.judges.sandbox import Limits

TESTS = "assert add(1, 2) == 3\nassert add(-1, 1) == 0"
GOOD = "Here is my solution:\n```python\ndef add(a, b):\n    return a + b\n```\nDone."
WRONG = "```python\ndef add(a, b):\n    return abs(a) + b\n```"


def fenced(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}\n```"


@pytest.fixture(scope="module")
def judge() -> CodeJudge:
    return CodeJudge(Limits(wall_s=3.0, cpu_s=2, memory_bytes=256 << 20), max_workers=2)


def one(judge: CodeJudge, completion: str, metadata: dict | None = None):
    meta = {"unit_tests": TESTS} if metadata is None else metadata
    return judge.evaluate(["prompt"], [completion], [meta])[0]


def test_correct_solution_passes(judge):
    assert one(judge, GOOD).value == 1


def test_wrong_solution_names_the_failing_assert(judge):
    verdict = one(judge, WRONG)
    assert verdict.value == 0
    assert verdict.reason == "AssertionError at unit_tests line 2: assert add(-1, 1) == 0"


def test_syntax_error_is_a_violation(judge):
    verdict = one(judge, fenced("def add(a, b)\n    return a + b"))
    assert verdict.value == 0
    assert verdict.reason.startswith("SyntaxError") and "code line 1" in verdict.reason


def test_exception_in_the_code_names_its_line(judge):
    verdict = one(judge, fenced("def add(a, b):\n    return a / 0"))
    assert verdict.value == 0
    assert verdict.reason.startswith("ZeroDivisionError")
    assert "code line 2: return a / 0" in verdict.reason


def test_no_code_block_is_a_violation(judge):
    assert one(judge, "def add(a, b): return a + b").reason == "no code block"
    assert one(judge, fenced("echo add", tag="bash")).value == 0


def test_missing_unit_tests_is_a_judge_failure(judge):
    verdict = one(judge, GOOD, {})
    assert verdict.value == -1 and "unit_tests" in verdict.reason


def test_unit_tests_that_do_not_compile_are_a_judge_failure(judge):
    verdict = one(judge, GOOD, {"unit_tests": "assert add(1, 2) =="})
    assert verdict.value == -1 and "do not compile" in verdict.reason


def test_the_last_complete_block_is_judged(judge):
    draft_then_final = f"Draft:\n{WRONG}\nFixed:\n{GOOD}"
    assert one(judge, draft_then_final).value == 1
    final_then_truncated = f"{GOOD}\nAlternative:\n```python\ndef add(a, b):\n    return"
    assert one(judge, final_then_truncated).value == 1
    assert one(judge, f"{GOOD}\n{WRONG}").value == 0


def test_extract_code_accepts_python_tags_and_untagged_blocks():
    assert extract_code("```py\nx = 1\n```") == "x = 1\n"
    assert extract_code("```\nx = 2\n```") == "x = 2\n"
    assert extract_code("1. step\n   ```Python3\n   x = 3\n   ```") == "x = 3\n"
    assert extract_code("```python\nx = 4\n```\n```bash\nls\n```") == "x = 4\n"
    assert extract_code("```python\nx = 5") is None


@pytest.mark.parametrize("exit_call", ["import sys\nsys.exit(0)", "import os\nos._exit(0)"])
def test_exiting_before_the_tests_ran_does_not_pass(judge, exit_call):
    verdict = one(judge, fenced(f"def add(a, b):\n    return 0\n{exit_call}"))
    assert verdict.value == 0 and "exited before the program finished" in verdict.reason


def test_setup_runs_before_the_code(judge):
    code = fenced("def add(a: List[int], b):\n    return a + b")
    assert one(judge, code, {"unit_tests": TESTS, "setup": "from typing import List"}).value == 1
    assert "NameError" in one(judge, code).reason


def test_verdicts_keep_input_order(judge):
    completions = [GOOD, WRONG, "no code", GOOD, fenced("raise SystemExit(3)"), GOOD]
    values = judge.judge(["p"] * 6, completions, [{"unit_tests": TESTS}] * 6)
    assert values == [1, 0, 0, 1, 0, 1]


def test_a_sandbox_that_cannot_start_is_a_judge_failure(monkeypatch):
    sandbox.capabilities()  # probed before fork is made to fail
    judge = CodeJudge()  # a fresh one: the shared judge has this program's verdict cached

    def no_fork(*args, **kwargs):
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(sandbox.subprocess, "Popen", no_fork)
    verdict = one(judge, GOOD)
    assert verdict.value == -1 and "cannot start the sandbox" in verdict.reason


def test_lengths_must_agree(judge):
    with pytest.raises(ValueError, match="differ in length"):
        judge.evaluate(["p"], [GOOD, GOOD], [{"unit_tests": TESTS}])


UNITTEST_STYLE = (
    "import unittest\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n"
    "        self.assertEqual(add(1, 2), 3)\n"
    "    def test_negative(self):\n"
    "        self.assertEqual(add(-1, 1), 0)\n"
)
PYTEST_STYLE = (
    "def test_add():\n    assert add(1, 2) == 3\ndef test_negative():\n    assert add(-1, 1) == 0\n"
)


@pytest.mark.parametrize(
    "tests",
    [
        TESTS,
        UNITTEST_STYLE,
        UNITTEST_STYLE + "unittest.main()",
        UNITTEST_STYLE + "if __name__ == '__main__':\n    unittest.main()",
        PYTEST_STYLE,
    ],
    ids=["assert", "unittest", "unittest.main()", "unittest under __main__", "pytest"],
)
def test_a_correct_program_passes_in_every_test_style_and_a_wrong_one_does_not(judge, tests):
    assert one(judge, GOOD, {"unit_tests": tests}).value == 1
    assert one(judge, WRONG, {"unit_tests": tests}).value == 0


def test_a_pytest_function_with_fixtures_is_a_judge_failure(judge):
    verdict = one(judge, GOOD, {"unit_tests": "def test_add(tmp_path):\n    assert add(1, 2) == 3"})
    assert verdict.value == -1 and "takes arguments" in verdict.reason


def test_unit_tests_that_assert_nothing_are_a_judge_failure(judge):
    verdict = one(judge, GOOD, {"unit_tests": "print(add(1, 2))"})
    assert verdict.value == -1 and "assert nothing" in verdict.reason


def test_tests_use_their_own_fresh_copies_of_common_modules(judge):
    tests = (
        "import collections, dataclasses, datetime, decimal, enum, fractions, functools, heapq\n"
        "import itertools, json, math, random, re, statistics, string, sys, typing, unittest\n"
        "assert json.loads(json.dumps({'s': add(1, 2)})) == {'s': 3}\n"
        "assert collections.Counter([add(1, 1), 2])[2] == 2\n"
        "assert float(fractions.Fraction(add(1, 2), 6)) == 0.5\n"
        "assert str(decimal.Decimal(add(1, 2))) == '3'\n"
        "assert math.isclose(statistics.mean([add(1, 2), 3]), 3.0)\n"
        "assert re.fullmatch(r'\\d', str(add(1, 2))) is not None\n"
        "assert heapq.nsmallest(1, [add(1, 2), 5]) == [3]\n"
        "assert list(itertools.repeat(add(1, 2), 2)) == [3, 3]\n"
        "random.seed(0)\nassert random.random() < 1\n"
        "assert datetime.date(2020, 1, add(1, 2)).day == 3\n"
        "assert string.digits[add(1, 2)] == '3'\n"
    )
    assert one(judge, GOOD, {"unit_tests": tests}).value == 1


RANDOM_TESTS = (
    "rolls = {roll() for _ in range(50)}\nassert rolls <= {1, 2, 3, 4, 5, 6}\nassert len(rolls) > 1"
)
ROLL = fenced("import random\ndef roll():\n    return random.randint(1, 6)")


def test_a_function_must_answer_the_same_call_the_same_way(judge):
    verdict = one(judge, ROLL, {"unit_tests": RANDOM_TESTS})
    assert verdict.value == 0 and "answered two ways" in verdict.reason


def test_a_task_about_randomness_says_so(judge):
    assert one(judge, ROLL, {"unit_tests": RANDOM_TESTS, "deterministic": False}).value == 1
    verdict = one(judge, ROLL, {"unit_tests": RANDOM_TESTS, "deterministic": "no"})
    assert verdict.value == -1 and "deterministic" in verdict.reason
