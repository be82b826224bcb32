"""CGPO's code judge: the response's code must pass the sample's unit tests, run in a sandbox.

The code is the last complete fenced block tagged python/py/python3 or untagged: models often
show a draft or an example first and the final solution last, and a block cut off by the length
limit is not a solution. The program is metadata "setup" (optional, e.g. imports the tests need),
the code, then metadata "unit_tests" (CGPO's `assert f(1) == 2` lines), each on its own lines.

It passes (1) only if the program runs to its end and exits 0 within the sandbox's limits; any
failure is 0 with a reason. Missing or uncompilable unit tests, or a sandbox that cannot start,
are judge failures (-1). Samples run concurrently, each in its own sandbox process; the judge's
threads only wait on them. See `rlguard.judges.sandbox` for what the sandbox enforces.
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
FRAME = re.compile(r'File "program\.py", line (\d+)')


def extract_code(completion: str) -> str | None:
    """The last complete python (or untagged) fenced block, dedented; None if there is none."""
    blocks = [body for tag, body in FENCE.findall(completion) if tag.lower() in PYTHON_TAGS]
    return textwrap.dedent(blocks[-1]) if blocks else None


@dataclass(frozen=True)
class Program:
    """The program's source and where each part starts, to say which line failed."""

    parts: tuple[tuple[str, str], ...]  # (name, text), in order

    @property
    def source(self) -> str:
        return "\n".join(text for _, text in self.parts) + "\n"

    def locate(self, line: int) -> str:
        """'unit_tests line 2: assert f(2) == 5' for a line of the whole program."""
        for name, text in self.parts:
            lines = text.split("\n")
            if line <= len(lines):
                return f"{name} line {line}: {lines[line - 1].strip()[:120]}"
            line -= len(lines)
        return f"line {line}"

    def explain(self, result: SandboxResult) -> str:
        """The sandbox's reason, plus the exception and its line for a traceback.

        The stderr it parses is the program's own, so a program could fake it; only the verdict
        is trusted, the reason is for humans.
        """
        if not result.reason.startswith("exit code"):
            return result.reason
        lines = result.stderr_tail.strip().splitlines()
        frames = FRAME.findall(result.stderr_tail)
        if not lines or not frames:
            return result.reason
        error = lines[-1].strip()[:200]
        where = self.locate(int(frames[-1]))
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
        try:
            compile(tests, "unit_tests", "exec")  # the dataset's, not the policy's text
        except (SyntaxError, ValueError) as exc:
            return failed(f"unit_tests do not compile: {exc}")
        code = extract_code(completion)
        if code is None:
            return violated("no code block")
        setup = str(metadata.get("setup") or "")
        parts = (("setup", setup),) if setup else ()
        program = Program((*parts, ("code", code.rstrip("\n")), ("unit_tests", tests)))
        with self._lock:
            if (known := self._verdicts.get(program.source)) is not None:
                self._verdicts.move_to_end(program.source)
                return known
        try:
            result = run_program(program.source, self.limits)
        except SandboxError as exc:
            return failed(f"sandbox: {exc}")
        verdict = satisfied("unit tests passed") if result.ok else violated(program.explain(result))
        with self._lock:
            self._verdicts[program.source] = verdict
            while len(self._verdicts) > self.cache_size:
                self._verdicts.popitem(last=False)
        return verdict
