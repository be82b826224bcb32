"""A multigrader's `calculate_output`: arithmetic over its sub-graders' scores, with OpenAI's
operators (+ - * / ^, unary + and -, parentheses) and functions (min, max, abs, floor, ceil,
exp, sqrt, log), evaluated by simpleeval restricted to exactly those (never Python's `eval`):
one expression, no comparisons, conditionals, attributes, strings or other names. `^` is a
power, as OpenAI writes it: read as Python's `**`, so it binds tighter than * and / and from the
right (`2 * a ^ 2` is 2 * (a ^ 2); Python's own `^` would be (2 * a) ^ 2), and `**` itself is
refused. Every number is a float, so a huge power overflows at once instead of building a huge
integer."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

from simpleeval import InvalidExpression, SimpleEval

OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,  # `^`
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
FUNCTIONS = {
    "min": min,
    "max": max,
    "abs": abs,
    "floor": lambda x: float(math.floor(x)),
    "ceil": lambda x: float(math.ceil(x)),
    "exp": math.exp,
    "sqrt": math.sqrt,
    "log": math.log,
}
NODES = (ast.Name, ast.UnaryOp, ast.BinOp, ast.Call, ast.Constant)


class FormulaError(ValueError):
    """Not a formula over these names (`structural`), or one whose value is not a number."""

    def __init__(self, message: str, structural: bool) -> None:
        super().__init__(message)
        self.structural = structural


class _Numbers(SimpleEval):
    def __init__(self, names: Mapping[str, float]) -> None:
        super().__init__(operators=OPERATORS, functions=FUNCTIONS, names=dict(names))
        # simpleeval's handlers, less every kind of node that is not in OpenAI's formulas
        self.nodes = {kind: handler for kind, handler in self.nodes.items() if kind in NODES}

    def _eval_constant(self, node: ast.Constant) -> object:
        if type(node.value) not in (int, float):
            raise InvalidExpression(f"{node.value!r} is not a number")
        return float(node.value)


def evaluate(text: str, scores: Mapping[str, float]) -> float:
    """The formula's value; FormulaError when it is no formula of OpenAI's over these names
    (structural) or its value is no finite number (division by zero, log of 0, overflow)."""
    try:
        if "**" in text:
            raise InvalidExpression("'**' is not an operator of OpenAI's; a power is '^'")
        python = text.strip().replace("^", "**")  # no strings in a formula: only operators
        tree = ast.parse(python, mode="eval").body  # one expression, not statements
        value = _Numbers({k: float(v) for k, v in scores.items()}).eval(python, tree)
    except (SyntaxError, InvalidExpression, TypeError) as e:
        raise FormulaError(
            f"not a formula of OpenAI's operators and functions: {e}", True
        ) from None
    except (ArithmeticError, ValueError) as e:
        raise FormulaError(f"no value for {dict(scores)}: {e}", False) from None
    if type(value) is not float or not math.isfinite(value):
        raise FormulaError(f"{value!r} is not a finite number (scores {dict(scores)})", False)
    return float(value)


def check(text: str, names: list[str]) -> None:
    """FormulaError if the text is no formula over these names; a formula whose value fails only
    for some scores (a division by one of them) passes."""
    try:
        evaluate(text, dict.fromkeys(names, 0.5))
    except FormulaError as e:
        if e.structural:
            raise
