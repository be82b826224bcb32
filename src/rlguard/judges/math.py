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
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed")
_DIGIT_GROUPS = re.compile(r"(?<![\w.,])\d{1,3}(?: \d{3})+(?![\w.,])")
# Words that turn an answer into a guess ("any integer, e.g. 4", "some value like $4$"):
# math-verify reads the last number and would accept it, so prose around the answer may not hedge.
HEDGE = re.compile(
    r"(?<!\w)(e\.g\.|for example|for instance|such as|like|maybe|perhaps|probably|possibly|"
    r"either|depends|depending|any|some|guess|not sure|unsure|might|could)(?!\w)",
    re.IGNORECASE,
)
_MATH = re.compile(r"\$[^$]*\$|\\\(.*?\\\)|\\\[.*?\\\]|\\boxed\{[^{}]*\}")


def final_answer(completion: str) -> str | None:
    """The text after the last "The final answer is", up to the end of its line, without the
    sentence's closing period."""
    matches = FINAL_ANSWER.findall(completion)
    if not matches:
        return None
    answer = matches[-1].strip()
    return answer[:-1].rstrip() if answer.endswith(".") else answer


def hedge(answer: str) -> str | None:
    """The first hedging word in the answer's prose (outside its $...$, \\(...\\), \\[...\\]
    and \\boxed{})."""
    found = HEDGE.search(_MATH.sub(" ", answer))
    return found[0] if found else None


def parse_math(text: str) -> list:
    """Parse an answer as math-verify does, reading a bare answer as LaTeX first.

    An answer with its own math ($...$, \\(...\\), \\[...\\], \\boxed) is parsed as math-verify
    parses a response, prose around it included. A bare answer is parsed as LaTeX first (as plain
    text "1+x^2" would parse as just "1"), with space-separated digit groups joined as LaTeX renders
    them ("12 345" is 12345, where math-verify's LaTeX reads 12*345), then in math-verify's
    plain-expression form.

    math-verify's timeouts use SIGALRM, which only the main thread may set; elsewhere (a judge in
    a worker thread) parsing runs without its timeout.
    """
    timeout = _timeout()
    if _DELIMITED.search(text):
        return parse(text, parsing_timeout=timeout)
    latex = _DIGIT_GROUPS.sub(lambda m: m[0].replace(" ", ""), text)
    return parse(f"${latex}$", parsing_timeout=timeout) or parse(text, parsing_timeout=timeout)


def same_answer(gold: list, predicted: list) -> bool:
    """math-verify's verdict with its default options (6-digit float rounding, strict symbols)."""
    return verify(gold, predicted, timeout_seconds=_timeout())


def _timeout() -> int | None:
    return 5 if threading.current_thread() is threading.main_thread() else None


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
        if (word := hedge(answer)) is not None:
            return violated(f"hedged final answer {answer!r} ({word!r})")
        predicted = parse_math(answer)
        if not predicted:
            return violated(f"cannot parse final answer {answer!r}")
        if same_answer(gold, predicted):
            return satisfied(f"{answer!r} equals {gold_text!r}")
        return violated(f"{answer!r} differs from {gold_text!r}")
