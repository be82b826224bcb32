"""CGPO's code judge: the response's code must pass the sample's unit tests, run in a sandbox.

The code is the last complete fenced block tagged python/py/python3 or untagged: models often
show a draft or an example first and the final solution last, and a block cut off by the length
limit is not a solution. The candidate's program is the setup's imports, functions and classes
(metadata "setup", optional), then the code; metadata "unit_tests" (CGPO's `assert f(1) == 2`
lines, or any Python: pytest-style `def test_*():` functions and unittest TestCases, both run by
the harness after the tests, stdin/stdout fed through io.StringIO) runs after the whole setup.
A module-level function of the candidate's must answer the same call the same way each time
(a call counter cannot answer a repeated assertion two ways), unless metadata "deterministic" is
false (a task about randomness).

The tests and the candidate never share a process: the program runs in one sandbox and answers
calls, the setup and tests in another (its own uid), reaching the candidate's names through a
framed call/answer pipe (`rlguard.judges._sandbox_wire`): arguments cross as copies, answers as
plain data the tests' side rebuilds itself, so nothing of the tests (their values, their
objects, their channel to the judge) is in the candidate's reach. Each compared value then
crosses to the judge's process as plain data and is compared here too
(`rlguard.judges._code_checks`). It passes (1) only if every assertion ran and held here, and the
tests ran to their end within the sandboxes' limits; any failure, malformed traffic from the
candidate included, is 0 with a reason. Missing, uncompilable, unsupported or assertion-free
unit tests, or a sandbox that cannot start, are judge failures (-1). Samples run concurrently,
each in its own pair of sandbox processes; the judge's threads only wait on them. See
`rlguard.judges.sandbox` for what the sandbox enforces.
"""

from __future__ import annotations

import os
import re
import textwrap
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ClassVar

from rlguard.judges import _code_checks as checks
from rlguard.judges.base import (
    Judge,
    Metadata,
    Verdict,
    _check_lengths,
    failed,
    require,
    satisfied,
    violated,
)
from rlguard.judges.sandbox import Limits, SandboxError, SandboxResult, run_program

FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
PYTHON_TAGS = frozenset({"", "python", "py", "python3"})
FRAME = re.compile(r'File "(program\.py|unit_tests)", line (\d+)')


def extract_code(completion: str) -> str | None:
    """The last complete python (or untagged) fenced block, dedented; None if there is none."""
    blocks = [body for tag, body in FENCE.findall(completion) if tag.lower() in PYTHON_TAGS]
    return textwrap.dedent(blocks[-1]) if blocks else None


@dataclass(frozen=True)
class Program:
    """The program's source and where each part starts, to say which line failed."""

    parts: tuple[tuple[str, str], ...]  # (name, text), in order: setup, code
    tests: str
    setup: str = ""  # the row's whole setup, which the tests run (the candidate gets a part)
    deterministic: bool = True

    @property
    def source(self) -> str:
        return "\n".join(text for _, text in self.parts) + "\n"

    @property
    def key(self) -> str:
        """What decides the verdict: the program, the setup, the tests and their options."""
        return f"{self.source}\0{self.setup}\0{self.tests}\0{self.deterministic}"

    def locate(self, file: str, line: int) -> str:
        """'code line 2: return a / 0' for a line of the program (or of the unit tests)."""
        parts = (("unit_tests", self.tests),) if file == "unit_tests" else self.parts
        for name, text in parts:
            lines = text.split("\n")
            if line <= len(lines):
                return f"{name} line {line}: {lines[line - 1].strip()[:120]}"
            line -= len(lines)
        return f"line {line}"

    def explain(self, result: SandboxResult) -> str:
        """The sandbox's reason, plus the exception and the line of the program it came from
        (else the test's line) for a traceback.

        The line names the candidate sends with its errors are its own, so a program could fake
        them; only the verdict is trusted, the reason is for humans.
        """
        if not result.reason.startswith("exit code"):
            return result.reason
        lines = result.stderr_tail.strip().splitlines()
        frames = FRAME.findall(result.stderr_tail)
        if not lines or not frames:
            return result.reason
        error = lines[-1].strip()[:200].removeprefix("rlguard_sandbox_harness.")
        in_program = [frame for frame in frames if frame[0] == "program.py"]
        file, line = (in_program or frames)[-1]
        where = self.locate(file, int(line))
        prefix = "memory limit: " if error.startswith("MemoryError") else ""
        return f"{prefix}{error} at {where}"


class CodeJudge(Judge):
    name: ClassVar[str] = "code"

    def __init__(
        self, limits: Limits | None = None, max_workers: int | None = None, cache_size: int = 4096
    ) -> None:
        self.limits = limits or Limits()
        self.max_workers = max_workers or os.cpu_count() or 1
        # Policies repeat themselves: a program already run (same setup, code and tests) takes
        # its verdict from this bounded LRU instead of another sandbox. Judge failures (-1) are
        # not kept: they may be transient.
        self.cache_size = cache_size
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()

    def evaluate(
        self, prompts: Sequence[str], completions: Sequence[str], metadata: Sequence[Metadata]
    ) -> list[Verdict]:
        _check_lengths(prompts, completions, metadata)
        workers = max(1, min(self.max_workers, len(prompts)))
        with ThreadPoolExecutor(workers, thread_name_prefix="code-judge") as pool:
            return list(pool.map(self._safe_check, prompts, completions, metadata))

    def check(self, prompt: str, completion: str, metadata: Metadata) -> Verdict:
        tests = str(require(metadata, "unit_tests"))
        setup = str(metadata.get("setup") or "")
        deterministic = metadata.get("deterministic", True)
        if type(deterministic) is not bool:
            return failed(f"metadata deterministic must be true or false, not {deterministic!r}")
        try:  # the dataset's text, not the policy's
            test_plan = checks.plan(tests, setup, deterministic)
        except checks.UnsupportedTest as exc:
            return failed(f"unit_tests are not supported: {exc}")
        except (SyntaxError, ValueError) as exc:
            return failed(f"unit_tests do not compile: {exc}")
        code = extract_code(completion)
        if code is None:
            return violated("no code block")
        shared = checks.candidate_setup(setup)
        parts = (("setup", shared),) if shared else ()
        program = Program((*parts, ("code", code.rstrip("\n"))), tests, setup, deterministic)
        with self._lock:
            if (known := self._verdicts.get(program.key)) is not None:
                self._verdicts.move_to_end(program.key)
                return known
        try:
            result = run_program(program.source, self.limits, test_plan.payload())
        except SandboxError as exc:
            return failed(f"sandbox: {exc}")
        verdict = _verdict(program, test_plan, result)
        with self._lock:
            self._verdicts[program.key] = verdict
            while len(self._verdicts) > self.cache_size:
                self._verdicts.popitem(last=False)
        return verdict


def _verdict(program: Program, test_plan: checks.TestPlan, result: SandboxResult) -> Verdict:
    """A failed assertion first (the tests go on after one), then the program's own end, then
    assertions that never ran; the child's exit status and output alone never pass."""
    reason = checks.first_failure(test_plan, result.records)
    if reason is None and not result.ok:
        reason = program.explain(result)
    if reason is None:
        reason = checks.never_ran(test_plan, result.records)
    return violated(reason) if reason else satisfied("unit tests passed")
