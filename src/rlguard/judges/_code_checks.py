"""The unit tests' assertions, judged in the judge's own process on plain data.

`plan(tests, setup)` rewrites every `assert` into `__rlguard_check__(id, plan, thunks)`, which
the sandbox (`_sandbox_tests.py`) runs: it evaluates the operands there, checks each is plain
data (exact built-in types) and sends it as JSON. `first_failure(plan, records)` decodes what
came back and evaluates each assertion here, so no object, metaclass or patched builtin of the
candidate's takes part in a comparison. Literal operands (`assert f(2) == 4`: the 4) stay here
and never reach the sandbox, unless the assertion short-circuits (`and`, `or`, `a < b < c`) and
the sandbox needs them to know which operands to evaluate.

What an assertion may say: `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`, `not`, `and`, `or`
and the truth of any expression, each evaluated here; `is` / `is not` comparisons are evaluated in
the sandbox as a whole (identity runs no method of the candidate's) and only their bool is sent.
A chain mixing `is` with other comparisons is refused (a judge failure). Every assertion must have
run at least once: one that never ran means the tests were cut short.
"""

from __future__ import annotations

import ast
import marshal
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rlguard.judges import _sandbox_wire as wire

CHECK = "__rlguard_check__"
OPS: dict[type[ast.cmpop], tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
}
_BY_NAME = {name: fn for name, fn in OPS.values()}


class UnsupportedTest(ValueError):
    """The unit tests use an assertion the judge cannot evaluate outside the sandbox."""


class BadRecord(ValueError):
    """What the sandbox sent does not match the assertion (a forged or cut-short record)."""


@dataclass(frozen=True, slots=True)
class Check:
    line: int
    text: str  # the assert's first source line, for reasons
    tree: tuple[Any, ...]  # how to evaluate it here: leaf, const, not, and, or, compare


@dataclass(frozen=True, slots=True)
class TestPlan:
    code: str  # the rewritten tests, a marshalled code object in hex (same interpreter both sides)
    checks: tuple[Check, ...]
    shared: tuple[str, ...]  # the setup's classes, which both sides define: sent by value
    setup: str
    unittest_check: int | None = None  # the check the harness's own run of the TestCases sends
    test_functions: tuple[str, ...] = ()  # pytest-style `def test_*():`, called by the harness
    deterministic: bool = True  # the candidate's functions answer the same call the same way

    def payload(self) -> dict[str, object]:
        return {
            "code": self.code,
            "shared": list(self.shared),
            "setup": self.setup,
            "unittest_check": self.unittest_check,
            "test_functions": list(self.test_functions),
            "deterministic": self.deterministic,
        }


def plan(tests: str, setup: str = "", deterministic: bool = True) -> TestPlan:
    """Raises SyntaxError (or ValueError) for tests that do not compile, UnsupportedTest for an
    assertion the judge cannot evaluate. `deterministic=False` lets the candidate's module-level
    functions answer a repeated call differently (a task about randomness)."""
    tree = ast.parse(tests, "unit_tests")
    if not any(_asserts(node) for node in ast.walk(tree)):
        raise UnsupportedTest("they assert nothing, so any program that ends would pass")
    lines = tests.split("\n")
    rewriter = _Rewriter(lines)
    tree = ast.fix_missing_locations(rewriter.visit(tree))
    code = marshal.dumps(compile(tree, "unit_tests", "exec")).hex()
    shared = tuple(node.name for node in ast.parse(setup).body if isinstance(node, ast.ClassDef))
    checks, unittest_check = rewriter.checks, None
    cases = [node for node in ast.walk(tree) if _is_test_case(node)]
    if cases:  # the harness runs them itself after the tests: one check, that none went wrong
        unittest_check = len(checks)
        text = "unittest: every test of the TestCases ran and passed (a skip is no pass)"
        checks.append(Check(cases[0].lineno, text, UNITTEST_TREE))
    functions = tuple(_test_functions(tree))
    return TestPlan(code, tuple(checks), shared, setup, unittest_check, functions, deterministic)


UNITTEST_TREE = ("compare", (("leaf",), ("const", 0)), ("==",))  # the problems the run counted


def _test_functions(tree: ast.Module) -> list[str]:
    """The top-level `def test_*():` the harness calls after the tests, as pytest would; one
    that takes arguments (pytest's fixtures, parametrize) cannot be run here."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            arguments = node.args
            if arguments.args or arguments.posonlyargs or arguments.kwonlyargs:
                raise UnsupportedTest(f"line {node.lineno}: {node.name} takes arguments (fixtures)")
            found.append(node.name)
    return found


def _is_test_case(node: ast.AST) -> bool:
    """A class deriving from something named *TestCase (unittest.TestCase, IsolatedAsync...)."""
    if not isinstance(node, ast.ClassDef):
        return False
    names = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
    return any(name.endswith("TestCase") for name in names)


ASSERTING_CALLS = ("assert", "fail", "raises")  # unittest's assert*/fail, pytest.raises


def _asserts(node: ast.AST) -> bool:
    """An assertion: an `assert`, or a call to unittest's `assert*` / `fail` or `raises`."""
    if isinstance(node, ast.Assert):
        return True
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name.startswith(ASSERTING_CALLS)


def candidate_setup(setup: str) -> str:
    """What of the row's setup the candidate's program starts with: its imports, functions and
    classes (a `ListNode` both sides use), never its data: an assignment in the setup (expected
    values, test cases) stays in the tests' namespace."""
    tree = ast.parse(setup, "setup")
    kept = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return "\n".join(
        ast.get_source_segment(setup, node, padded=True) or ""
        for node in tree.body
        if isinstance(node, kept)
    )


class _Rewriter(ast.NodeTransformer):
    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.checks: list[Check] = []

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        flat = _Builder(keep_consts=False)
        tree, child = flat.build(node.test)
        if flat.needs_tree:  # the sandbox must short-circuit: it gets the literals too
            built = _Builder(keep_consts=True)
            tree, child = built.build(node.test)
            thunks = built.thunks
        else:
            child, thunks = ("flat", tuple(range(len(flat.thunks)))), flat.thunks
        text = self.lines[node.lineno - 1].strip()[:120]
        self.checks.append(Check(node.lineno, text, tree))
        call = ast.Call(
            ast.Name(CHECK, ast.Load()),
            [
                ast.Constant(len(self.checks) - 1),
                ast.Constant(child),
                ast.Tuple([_thunk(e) for e in thunks], ast.Load()),
            ],
            [],
        )
        return ast.copy_location(ast.Expr(call), node)


def _thunk(expr: ast.expr) -> ast.Lambda:
    none = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.Lambda(none, expr)


class _Builder:
    """One assertion's tree for the judge and its plan for the sandbox, built side by side."""

    def __init__(self, keep_consts: bool) -> None:
        self.keep_consts = keep_consts
        self.thunks: list[ast.expr] = []
        self.needs_tree = False

    def build(self, expr: ast.expr) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        if isinstance(expr, ast.BoolOp):
            self.needs_tree = True
            kind = "and" if isinstance(expr.op, ast.And) else "or"
            pairs = [self.build(value) for value in expr.values]
            return (kind, tuple(p for p, _ in pairs)), (kind, tuple(c for _, c in pairs))
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            tree, child = self.build(expr.operand)
            return ("not", tree), ("not", child)
        if isinstance(expr, ast.Compare):
            return self._compare(expr)
        return self._operand(expr)

    def _compare(self, expr: ast.Compare) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        identity = [isinstance(op, ast.Is | ast.IsNot) for op in expr.ops]
        if all(identity):
            return self._leaf(expr)
        if any(identity):
            raise UnsupportedTest(f"line {expr.lineno}: a chain mixing 'is' with other comparisons")
        self.needs_tree |= len(expr.ops) > 1
        pairs = [self._operand(e) for e in (expr.left, *expr.comparators)]
        names = tuple(OPS[type(op)][0] for op in expr.ops)
        trees, children = tuple(p for p, _ in pairs), tuple(c for _, c in pairs)
        return ("compare", trees, names), ("compare", children, names)

    def _operand(self, expr: ast.expr) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        try:
            value = ast.literal_eval(expr)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return self._leaf(expr)
        if not self.keep_consts:
            return ("const", value), ("const", None)
        self.thunks.append(expr)
        return ("const", value), ("const", len(self.thunks) - 1)

    def _leaf(self, expr: ast.expr) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        self.thunks.append(expr)
        return ("leaf",), ("leaf", len(self.thunks) - 1)


def first_failure(test_plan: TestPlan, records: Sequence[str]) -> str | None:
    """Why an assertion failed, judged here from the sandbox's records (in the order they ran);
    None if every assertion that ran held."""
    for record in records:
        try:
            check_id, values = _parse(record, len(test_plan.checks))
        except BadRecord as exc:
            return f"bad check record: {exc}"
        check = test_plan.checks[check_id]
        where = f"at unit_tests line {check.line}: {check.text}"
        try:
            held = _holds(check.tree, values)
        except BadRecord as exc:
            return f"bad check record {where}: {exc}"
        except Exception as exc:  # comparing plain data can still raise (1 < "a")
            return f"{type(exc).__name__}: {exc} {where}"
        if not held:
            return f"AssertionError {where}"
    return None


def never_ran(test_plan: TestPlan, records: Sequence[str]) -> str | None:
    """The first assertion with no record: the tests were cut short (or a record was lost)."""
    ran = {record.split(" ", 2)[1] for record in records}
    for check_id, check in enumerate(test_plan.checks):
        if str(check_id) not in ran:
            return f"the tests were cut short: unit_tests line {check.line} never ran: {check.text}"
    return None


def _parse(record: str, count: int) -> tuple[int, list[Any]]:
    head, _, body = record.partition(" ")
    number, _, values = body.partition(" ")
    if head != "check" or not number.isdigit() or int(number) >= count:
        raise BadRecord(f"{record[:80]!r}")
    try:
        decoded = wire.Decoder(None).value(wire.parse(values))
    except wire.WireError as exc:
        raise BadRecord(str(exc)[:200]) from None
    if type(decoded) is not list:
        raise BadRecord("operands are not a list")
    return int(number), decoded


def _holds(tree: tuple[Any, ...], values: list[Any]) -> bool:
    stream = iter(values)
    held = bool(_value(tree, stream))
    if next(stream, _END) is not _END:
        raise BadRecord("more operands than the assertion evaluated")
    return held


_END = object()


def _value(node: tuple[Any, ...], stream: Iterator[Any]) -> Any:
    kind = node[0]
    if kind == "leaf":
        value = next(stream, _END)
        if value is _END:
            raise BadRecord("fewer operands than the assertion needs")
        return value
    if kind == "const":
        return node[1]
    if kind == "not":
        return not _value(node[1], stream)
    if kind in ("and", "or"):
        for operand in node[1]:
            value = _value(operand, stream)
            if bool(value) == (kind == "or"):
                return value
        return value
    left = _value(node[1][0], stream)
    for name, operand in zip(node[2], node[1][1:], strict=True):
        right = _value(operand, stream)
        if not _BY_NAME[name](left, right):
            return False
        left = right
    return True
