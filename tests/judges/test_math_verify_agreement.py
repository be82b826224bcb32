"""The math judge's answer comparison agrees with math-verify's own test cases.

The cases (data/math_verify_cases.json, extracted from math-verify's test suite) pair a gold and a
predicted text with the verdict math-verify's tests expect under the options each test passes.
The judge compares with one setting, math-verify's defaults, so it may disagree only where a case
runs math-verify with other options or another extractor; each such case is listed with why.
"""

import json
from pathlib import Path

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

from rlguard.judges.math import parse_math, same_answer

CASES = json.loads(Path(__file__).with_name("data").joinpath("math_verify_cases.json").read_text())
DECIMAL_COMMA = (
    "expr-only extractor reads a decimal comma; the judge reads a bare answer as LaTeX, where the "
    'comma separates list items (so "2, 3" stays a list; the expr extractor reads "2, 3" as 3)'
)
LATEX_ONLY = (
    "latex-only extractor rejects math split over lines; the judge also runs the plain-expression "
    "extractor, which finds the 9 (and its final answer is one line, so this never reaches it)"
)
ROUNDING = "case rounds floats to 2 digits; the judge uses math-verify's default 6"
# (source test, gold, pred) -> why the judge's verdict differs from the case's expected one
KNOWN_DISAGREEMENTS = {
    ("tests/test_all.py::test_number_extraction", "1000.99", "1000,99"): DECIMAL_COMMA,
    ("tests/test_all.py::test_number_extraction", "1,22", "1.22"): DECIMAL_COMMA,
    ("tests/test_all.py::test_latex_notation", "$9$", "Answer $ \n 9 \n $"): LATEX_ONLY,
    ("tests/test_all.py::test_latex_notation", "$9$", "Answer \\( \n 9 \n \\)"): LATEX_ONLY,
    (
        "tests/test_all.py::test_complex_math_expressions",
        "$(\\begin{pmatrix}\\frac{1}{3}\\\\ \\frac{1}{5} \\end{pmatrix})$",
        "$\\begin{pmatrix}0.33\\\\0.2 \\end{pmatrix}$",
    ): ROUNDING,
    (
        "tests/test_all.py::test_complex_math_expressions",
        "$(\\frac{3}{5},\\frac{8}{3}]$",
        "$(0.6,2.6667]$",
    ): ROUNDING,
    ("tests/test_all.py::test_set_rel_assymetry", "$x \\in [-2,7]$", "$-2 \\\\le x \\\\le 7$"): (
        "case allows set-relation comparison; the judge keeps math-verify's default (off)"
    ),
    ("tests/test_strict.py::test_strict_variable_comparison", "$f(x)$", "$f(y)$"): (
        "case is non-strict (f(x) = f(y)); the judge is strict, math-verify's default"
    ),
}


def key(case):
    return case["source"], case["gold"], case["pred"]


def math_verify_verdict(case):
    """math-verify's verdict with the options the case's own test passes (its compare_strings
    helper parses LaTeX with boxed_match_priority=0; match_types None is parse's default)."""
    options = {}
    if case["match_types"] is not None:
        latex = LatexExtractionConfig(boxed_match_priority=0)
        configs = [latex if m == "latex" else ExprExtractionConfig() for m in case["match_types"]]
        options["extraction_config"] = configs
    return verify(
        parse(case["gold"], **options),
        parse(case["pred"], **options),
        float_rounding=case["precision"],
        strict=case["strict"],
        allow_set_relation_comp=case["allow_set_relation_comp"],
    )


def judge_verdict(case):
    gold, pred = parse_math(case["gold"]), parse_math(case["pred"])
    return bool(gold) and bool(pred) and same_answer(gold, pred)


def test_the_cases_are_math_verifys_verdicts():
    """Every extracted case holds for the installed math-verify with its test's options."""
    assert len(CASES["cases"]) == 274
    wrong = [key(c) for c in CASES["cases"] if math_verify_verdict(c) != c["expected"]]
    assert wrong == []


def test_the_judge_agrees_except_where_the_options_differ():
    disagreements = {key(c) for c in CASES["cases"] if judge_verdict(c) != c["expected"]}
    assert disagreements == set(KNOWN_DISAGREEMENTS)
    assert len(CASES["cases"]) - len(disagreements) == 266  # of 274: 97.1%
