"""Rebuild math_verify_cases.json from math-verify's own test suite (its PyPI sdist ships it).

    pip download --no-deps --no-binary :all: math-verify==0.9.0 && tar xzf math_verify-0.9.0.tar.gz
    python tests/judges/data/extract_math_verify_cases.py math_verify-0.9.0

Reads every `pytest.mark.parametrize` table of (gold, pred, expected) in the sdist's tests as data
(`ast.literal_eval`: nothing is executed, and a computed row is skipped), with the options its test
function passes to math-verify, and writes them as JSON for the judge's agreement test.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

OUT = Path(__file__).with_name("math_verify_cases.json")
OPTIONS = ("match_types", "precision", "strict", "allow_set_relation_comp")
# The tests' compare_strings(gold, pred, ...) helper parses with LatexExtractionConfig(
# boxed_match_priority=0) and these defaults; a bare verify(parse(gold), parse(pred)) uses
# math-verify's own extraction defaults (match_types None).
DEFAULTS = {
    "compare_strings": {"match_types": ["latex", "expr"], "precision": 6, "strict": True},
    "verify": {"match_types": None, "precision": 6, "strict": True},
}


def _table(test: ast.FunctionDef) -> ast.Call | None:
    for decorator in test.decorator_list:
        if isinstance(decorator, ast.Call) and "parametrize" in ast.unparse(decorator.func):
            return decorator
    return None


def _comparison(test: ast.FunctionDef) -> ast.Call:
    calls = (node for node in ast.walk(test) if isinstance(node, ast.Call))
    return next(call for call in calls if ast.unparse(call.func) in DEFAULTS)


def cases_of(test: ast.FunctionDef, source: str) -> list[dict]:
    """The (gold, pred, expected) rows of `test` with the math-verify options each row runs with."""
    table = _table(test)
    if table is None:
        return []
    names = [name.strip() for name in ast.literal_eval(table.args[0]).split(",")]
    if not {"gold", "pred"} <= set(names):
        return []
    call = _comparison(test)
    helper = ast.unparse(call.func)
    keywords = {k.arg: k.value for k in call.keywords}
    rows = []
    for row in table.args[1].elts:
        try:
            values = dict(zip(names, map(ast.literal_eval, row.elts), strict=True))
        except ValueError:  # a computed row (an f-string), not data
            print(f"skipped {source}::{test.name} line {row.lineno}: not a literal")
            continue
        options = {**DEFAULTS[helper], "allow_set_relation_comp": False}
        for name in OPTIONS:
            if isinstance(keywords.get(name), ast.Name):  # a parametrized option
                options[name] = values[keywords[name].id]
            elif name in keywords:
                options[name] = ast.literal_eval(keywords[name])
        expected = values["expected"] if "expected" in values else values["result"]
        rows.append(
            {
                "source": f"{source}::{test.name}",
                "gold": values["gold"],
                "pred": values["pred"],
                "expected": int(expected),
                **options,
            }
        )
    return rows


def main(sdist: str) -> None:
    root = Path(sdist)
    cases = []
    for path in sorted((root / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for test in (node for node in tree.body if isinstance(node, ast.FunctionDef)):
            cases.extend(cases_of(test, f"tests/{path.name}"))
    version = root.name.removeprefix("math_verify-")
    header = {
        "source": f"math-verify {version} sdist (PyPI), tests/test_*.py parametrize tables",
        "license": "MIT, Copyright (c) 2024 The HuggingFace Team",
    }
    OUT.write_text(json.dumps({**header, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
