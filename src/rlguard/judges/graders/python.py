"""`python`: the tenant's `grade(sample, item) -> float`, run inside rlguard's judges' sandbox
(rlguard.judges.sandbox: a fresh `python -I -S` child with rlimits, its own uid and no network
where the host allows; never in the server's process). The server only parses the source, to
say at once when it does not define `grade(sample, item)`.

The sandbox's Python is the server's, with its standard library only (OpenAI's image adds
numpy, scipy and others): the one image there is, so an `image_tag` other than OpenAI's default
is refused. A grade that raises, runs past LIMITS, returns anything but a finite int or float,
or whose program is killed (memory, output) is a 400 with the sandbox's reason. Validating runs
the source without grading (`check`), so an import the sandbox lacks, or a source that raises or
loops as it loads, is refused before any sample.
"""

from __future__ import annotations

import ast
import json
import math
import secrets
from typing import Any, Literal

from pydantic import field_validator

from rlguard.judges.code import Program
from rlguard.judges.graders.base import Grade, Grader, GraderError
from rlguard.judges.sandbox import Limits, SandboxError, run_program

DEFAULT_IMAGE = "2025-05-08"  # OpenAI's default image_tag
MAX_SOURCE_BYTES = 256 * 1024  # OpenAI's limit on a python grader's source
LIMITS = Limits(wall_s=10.0, cpu_s=10)  # OpenAI allows 2 minutes; a request here waits for it
# Run after the tenant's source, each writes what it found on a line of its own after a random
# marker. _CALL: grade's result on the request's data (JSON text in a Python literal).
_CALL = """
def __rlguard_call():
    import json, sys
    value = grade(json.loads({sample!r}), json.loads({item!r}))
    shown = repr(value) if type(value) in (int, float) else "!" + type(value).__name__
    sys.stdout.write("\\n{marker}" + shown + "\\n")
__rlguard_call()
"""
# _LOADED: whether `grade` is callable once the source has run, else its type.
_LOADED = """
__import__("sys").stdout.write(
    "\\n{marker}" + ("callable" if callable(grade) else "!" + type(grade).__name__) + "\\n"
)
"""


class PythonGrader(Grader):
    type: Literal["python"]
    source: str
    image_tag: str | None = None

    @field_validator("source")
    @classmethod
    def _defines_grade(cls, source: str) -> str:
        if len(source.encode()) > MAX_SOURCE_BYTES:
            raise ValueError(f"the source exceeds {MAX_SOURCE_BYTES} bytes")
        try:
            tree = ast.parse(source)  # parsed, never run, here
        except SyntaxError as e:
            raise ValueError(f"not Python: {e.msg} at line {e.lineno}") from None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "grade":
                if len(node.args.args) + len(node.args.posonlyargs) >= 2 or node.args.vararg:
                    return source
                raise ValueError("grade must take two arguments: grade(sample, item)")
        raise ValueError("the source defines no top-level function grade(sample, item)")

    @field_validator("image_tag")
    @classmethod
    def _default_image(cls, tag: str | None) -> str | None:
        if tag not in (None, DEFAULT_IMAGE):
            raise ValueError(
                f"only the default image ({DEFAULT_IMAGE!r}) is available: graders run in "
                "rlguard's sandbox on the server's Python and its standard library"
            )
        return tag

    def check(self, at: str = "grader") -> None:
        shown = self._run(_LOADED, at)
        if shown != "callable":
            got = shown.removeprefix("!")
            raise GraderError(
                f"{at}.source: grade must be a function once the source has run, not {got}",
                f"{at}.source",
            )

    def grade(self, sample: dict[str, Any], item: Any, at: str = "grader") -> Grade:
        shown = self._run(_CALL, at, sample=json.dumps(sample), item=json.dumps(item))
        value = float(shown) if not shown.startswith("!") else None
        if value is None or not math.isfinite(value):
            got = shown.removeprefix("!") if value is None else shown
            raise GraderError(
                f"{at}.source: grade must return a finite number (int or float), not {got}",
                f"{at}.source",
            )
        return Grade(value)

    def _run(self, suffix: str, at: str, **data: str) -> str:
        """The last marked line the source followed by `suffix` writes in the sandbox ("!nothing"
        without one); a GraderError with the sandbox's reason when the program fails."""
        marker = f"rlguard-grade-{secrets.token_hex(8)}:"
        call = suffix.format(marker=marker, **data)
        program = Program((("source", self.source.rstrip("\n")), ("grader", call)), tests="")
        try:
            result = run_program(program.source, LIMITS)
        except SandboxError as e:
            raise GraderError(f"{at}: the sandbox cannot run: {e}", at, status=503) from None
        if not result.ok:
            raise GraderError(
                f"{at}.source: failed in the sandbox: {program.explain(result)}", f"{at}.source"
            )
        lines = [ln for ln in result.stdout_tail.splitlines() if ln.startswith(marker)]
        return lines[-1].removeprefix(marker) if lines else "!nothing"
