"""CGPO's math judge: the response must end its reasoning with "The final answer is X", and X must
equal the reference answer. Equivalence is math-verify's (LaTeX, fractions, sets, intervals, units),
so "1/2", "0.5" and "\\frac{1}{2}" agree; a response without the phrase is a format violation.
"""

from __future__ import annotations

import re
import threading
from typing import ClassVar

from math_verify import parse, verify

from rlguard.judges.base import Judge, Metadata, Verdict, failed, require, satisfied, violated

FINAL_ANSWER = re.compile(r"the final answer is[:\s]*(.+)", re.IGNORECASE)


def final_answer(completion: str) -> str | None:
    """The text after the last "The final answer is", up to the end of its line, without the
    sentence's closing period."""
    matches = FINAL_ANSWER.findall(completion)
    if not matches:
        return None
    answer = matches[-1].strip()
    return answer[:-1].rstrip() if answer.endswith(".") else answer


def parse_math(text: str) -> list:
    """Parse an answer as LaTeX math first (a bare "1+x^2" would otherwise parse as just "1"),
    then as math-verify's plain-expression form.

    math-verify's timeouts use SIGALRM, which only the main thread may set; elsewhere (a judge in
    a worker thread) parsing runs without its timeout.
    """
    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    delimited = text if text.startswith(("$", "\\(", "\\[")) else f"${text}$"
    return parse(delimited, parsing_timeout=timeout) or parse(text, parsing_timeout=timeout)


class MathJudge(Judge):
    name: ClassVar[str] = "math"

    def check(self, prompt: str, completion: str, metadata: Metadata) -> Verdict:
        gold_text = str(require(metadata, "answer"))
        gold = parse_math(gold_text)
        if not gold:
            return failed(f"cannot parse reference answer {gold_text!r}")
        answer = final_answer(completion)
        if answer is None:
            return violated('no "The final answer is ..." statement')
        if not answer:
            return violated("empty final answer")
        predicted = parse_math(answer)
        if not predicted:
            return violated(f"cannot parse final answer {answer!r}")
        timeout = 5 if threading.current_thread() is threading.main_thread() else None
        if verify(gold, predicted, timeout_seconds=timeout):
            return satisfied(f"{answer!r} equals {gold_text!r}")
        return violated(f"{answer!r} differs from {gold_text!r}")
