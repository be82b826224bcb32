"""The unit tests' side: runs the setup and the tests in a sandbox of their own, where the
candidate's program is not. Executed by the bootstrap after `_sandbox_wire.py`, in the same
namespace (never imported).

The candidate runs in another sandbox (`_sandbox_serve.py`, another uid); its top-level names are
bound here as copies (plain values) or `Remote`s, so a test's `f(xs)` sends a copy of `xs` there
and gets a plain value back, decoded here. No object, frame, module or channel of this process is
within the candidate's reach. Each `assert` was rewritten by the judge
(`rlguard.judges._code_checks`) into `__rlguard_check__(id, plan, thunks)`: the values it compares
must be plain data (exact built-in types), are written as JSON to the status pipe (which only this
process holds) and compared again in the judge's own process. A literal operand is not even sent
here, unless the assertion needs it to short-circuit (`and`, `or`, chained comparisons).
"""

import builtins
import contextlib
import marshal
import os
import sys

_str_join, _dict_values, _write = str.join, dict.values, os.write
_REAL_BUILTINS = dict(builtins.__dict__)
_REAL_IMPORT = builtins.__import__


def namespace():
    return {"__name__": "__main__", "__builtins__": dict(_REAL_BUILTINS)}


def _forward_out(link, message):
    """The candidate's stdout, written where the tests' stdout is now (maybe their StringIO)."""
    if _len(message) != 2 or _type(message[1]) is not str:
        raise link.broken("malformed output")
    sys.stdout.write(message[1])


def _forward_in(link, message):
    """A read of the candidate's stdin, from the tests' stdin (maybe their StringIO)."""
    how = message[1] if _len(message) == 3 else None
    if how not in ("read", "readline") or _type(message[2]) is not int:
        raise link.broken("a malformed stdin request")
    try:
        text = getattr(sys.stdin, how)(message[2])
    except Exception as exc:
        return link.failure(exc)
    return f'["ok",{encode(text if _type(text) is str else "", link)}]'


# what the candidate may do with objects of the tests' it holds (a key function, a callback):
# use them, never read their private attributes
SERVED = frozenset(
    {"call", "getattr", "iter", "next", "len", "bool", "repr", "str", "contains", "getitem"}
)


def connect(link_fds, tests_ns, shared, deterministic):
    """The link to the candidate's sandbox, once its program ran; its names are bound in the
    tests' namespace (see adopt)."""
    read_fd, write_fd = link_fds
    classes = {name: tests_ns[name] for name in shared if isinstance(tests_ns.get(name), type)}
    local = {"out": _forward_out, "in": _forward_in}
    link = Link(read_fd, write_fd, SERVED, classes, local, private=False)
    while True:
        _, message = link.receive()
        if message[0] == "ready" and _len(message) == 2:
            adopt(message[1], tests_ns, link, deterministic)
            return link
        if message[0] == "err":
            raise link.error(message)
        if message[0] not in local:
            raise link.broken(f"{message[0][:20]!r} before the program was ready")
        if (reply := link.serve(message)) is not None:
            link.send(reply)


def adopt(names, tests, link, deterministic):
    """Give the tests the candidate's top-level names: plain values as copies, modules as the
    tests' own import of them, everything else as a Remote; a function answers the same call
    the same way each time unless the row says its task is not deterministic. Names the tests'
    namespace already has (setup's) and builtin names keep their meaning."""
    if _type(names) is not dict or list(names) != ["d"] or _type(names["d"]) is not list:
        raise link.broken("malformed names")
    builtin_names = tests["__builtins__"]
    for pair in names["d"]:
        if _type(pair) is not list or _len(pair) != 2 or _type(pair[0]) is not str:
            raise link.broken("a malformed name")
        name, value = pair
        if name.startswith("__") or name in tests or name in builtin_names:
            continue
        if _type(value) is dict and list(value) == ["m"] and _type(value["m"]) is str:
            with contextlib.suppress(Exception):
                tests[name] = _REAL_IMPORT(value["m"], fromlist=["_"])
        elif _type(value) is dict and list(value) == ["h"] and _type(value["h"]) is int:
            tests[name] = Remote(link, value["h"], pure=deterministic)
        else:
            tests[name] = link.decoded(Decoder(link), [value])


def checker(status_fd):
    """`__rlguard_check__`: evaluates an assertion's operands here, sends them to the judge."""

    def check(check_id, plan, thunks):
        values = []
        _evaluate(plan, thunks, values, check_id)
        line = f"check {check_id} [{_str_join(',', values)}]\n"
        data = line.encode()
        while data:
            data = data[_write(status_fd, data) :]

    return check


def _evaluate(plan, thunks, values, check_id):
    """Sends each operand the judge must see. A "flat" plan lists the operands to send (the judge
    alone knows the literals); a tree is evaluated here too, to short-circuit as Python does.

    Operands are plain data by then, so the comparisons and truth tests run on exact built-in
    types and call no method of the candidate's.
    """
    if plan[0] == "flat":
        for index in plan[1]:
            _send(thunks[index](), values, check_id)
        return None
    return _node(plan, thunks, values, check_id)


def _send(value, values, check_id):
    try:
        values.append(encode(value, None))
    except NotPlain as exc:
        raise NotPlain(f"check {check_id}: {exc}") from None
    return value


def _node(node, thunks, values, check_id):
    kind = node[0]
    if kind == "leaf":
        return _send(thunks[node[1]](), values, check_id)
    if kind == "const":
        return thunks[node[1]]()
    if kind == "not":
        return not _node(node[1], thunks, values, check_id)
    if kind in ("and", "or"):
        for operand in node[1]:
            value = _node(operand, thunks, values, check_id)
            if bool(value) == (kind == "or"):
                return value
        return value
    # ("compare", operands, ops): chained, each operand evaluated once and only when needed
    left = _node(node[1][0], thunks, values, check_id)
    for op, operand in zip(node[2], node[1][1:], strict=True):
        right = _node(operand, thunks, values, check_id)
        if not _COMPARE[op](left, right):
            return False
        left = right
    return True


_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


def run(tests, status_fd):
    """Setup first, then the link to the candidate's running program, then the tests, their
    pytest-style test functions and their TestCases (both run by the harness). An error the
    candidate raised names its program line on stderr first, for the judge's reason."""
    link = None
    try:
        ns = namespace()
        unittest = _unittest() if tests["unittest_check"] is not None else None
        if tests["setup"]:
            exec(compile(tests["setup"], "setup", "exec"), ns)
        link = connect(tests["link"], ns, tests["shared"], tests["deterministic"])
        check = ns["__rlguard_check__"] = checker(status_fd)
        exec(marshal.loads(bytes.fromhex(tests["code"])), ns)
        for name in tests["test_functions"]:
            ns[name]()
        if unittest is not None:
            problems = run_test_cases(unittest, ns)
            check(tests["unittest_check"], ("flat", (0,)), (lambda: problems,))
    except BaseException as exc:
        place = getattr(exc, "rlguard_where", "")
        if _type(place) is str and place:
            _write(2, f"  {place.splitlines()[0]}, in <candidate>\n".encode())
        raise
    link.check()  # a test that swallowed the link's failure still fails


def _unittest():
    """The tests' unittest (its snapshot), whose `main()` does nothing: the harness runs the
    TestCases itself, after the tests, so `unittest.main()` neither exits before the end nor
    runs the bootstrap's `__main__` in place of the tests."""
    unittest = _REAL_IMPORT("unittest")
    unittest.main = lambda *args, **kwargs: None
    return unittest


def run_test_cases(unittest, ns):
    """How many of the tests' TestCase tests went wrong (failed, errored, skipped, expected to
    fail); one more when none ran."""
    loader, result = unittest.TestLoader(), unittest.TestResult()
    for value in list(_dict_values(ns)):
        if isinstance(value, type) and issubclass(value, unittest.TestCase):
            loader.loadTestsFromTestCase(value).run(result)
    wrong = (result.failures, result.errors, result.skipped, result.expectedFailures)
    problems = sum(_len(found) for found in wrong) + _len(result.unexpectedSuccesses)
    return problems + (result.testsRun == 0)
