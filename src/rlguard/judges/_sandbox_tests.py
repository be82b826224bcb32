"""The unit tests' side of the sandbox child: runs the tests where the candidate cannot reach them.

Executed by the bootstrap (never imported) before the candidate's code, so every name bound here
is the real one: later patches of builtins, modules or `type` by the candidate do not change them.
The tests run in a namespace of their own: a copy of the real builtins, snapshots of the modules
the tests and setup import (taken before the candidate ran), the setup's names, and the
candidate's functions, wrapped so that what they return must be plain data (exact built-in types,
recursively) or another function or iterator wrapped the same way. Each `assert` was rewritten by
the judge (`rlguard.judges._code_checks`) into `__rlguard_check__(id, plan, thunks)`: the values
it compares are checked to be plain data, written as JSON to the status pipe, and compared in the
judge's own process. A literal operand is not even sent here, unless the assertion needs it to
short-circuit (`and`, `or`, chained comparisons).
"""

import builtins
import contextlib
import marshal
import os
import sys
import types

# json's own C encoder (json.encoder takes it from here), without json's import of re and enum
from _json import encode_basestring_ascii as _escape

_type, _id, _len, _repr, _str_join = type, id, len, repr, str.join
_SEQUENCES = (list, tuple, set, frozenset)
_dict, _dict_items, _dict_values, _bytearray = dict, dict.items, dict.values, bytearray
_float_repr, _int_repr, _int_hex = float.__repr__, int.__repr__, hex
_type_name = type.__dict__["__name__"].__get__  # bypasses a metaclass's own __name__
_write = os.write
_REAL_BUILTINS = dict(builtins.__dict__)
_REAL_IMPORT = builtins.__import__
_ITERATORS = frozenset(
    _type(x)
    for x in (
        (i for i in ()),
        map(None, ()),
        filter(None, ()),
        zip(),
        enumerate(()),
        reversed(()),
        iter(()),
        iter([]),
        iter({}),
        iter(set()),
        iter(""),
        iter(range(0)),
        {}.items().__iter__(),
        {}.values().__iter__(),
    )
)
_FUNCTIONS = frozenset({types.FunctionType, types.BuiltinFunctionType, types.MethodType})
_CONTAINERS = {list: "[", tuple: '{"tuple":[', set: '{"set":[', frozenset: '{"frozenset":['}
_BIG = 10**4000  # beyond this, decimal text is slow and json refuses it: hex instead
MAX_DEPTH = 200


class NotPlain(TypeError):
    """A value the tests compare is not plain data (a candidate's object, or a cycle)."""


def dump(value):
    """JSON text of a plain value; raises NotPlain for anything else.

    Only exact built-in types pass (`type(x) is int`, never isinstance), so no method of the
    candidate's runs while the value is read. Lists are JSON arrays; the other containers, bytes,
    complex numbers and huge ints are one-key objects the judge decodes.
    """
    out = []
    _dump(value, out, set(), 0)
    return _str_join("", out)


def _dump(value, out, path, depth):
    kind = _type(value)
    if value is None or kind is bool:
        out.append("null" if value is None else "true" if value else "false")
    elif kind is int:
        out.append(_int_repr(value) if -_BIG < value < _BIG else f'{{"int":"{_int_hex(value)}"}}')
    elif kind is float:
        out.append(_float_text(value))
    elif kind is str:
        out.append(_escape(value))
    elif kind is bytes or kind is bytearray:
        out.append(f'{{"{_type_name(kind)}":"{value.hex()}"}}')
    elif kind is complex:
        out.append(f'{{"complex":[{_float_text(value.real)},{_float_text(value.imag)}]}}')
    elif kind in _CONTAINERS or kind is dict:
        _dump_container(value, kind, out, path, depth)
    else:
        raise NotPlain(f"{_type_name(kind)} is not plain data (exact built-in types only)")


def _dump_container(value, kind, out, path, depth):
    if _id(value) in path or depth >= MAX_DEPTH:
        raise NotPlain("a container that holds itself, or nests too deep, is not plain data")
    path.add(_id(value))
    if kind is dict:
        out.append('{"dict":[')
        for i, (key, item) in enumerate(dict.items(value)):
            out.append("," if i else "")
            out.append("[")
            _dump(key, out, path, depth + 1)
            out.append(",")
            _dump(item, out, path, depth + 1)
            out.append("]")
        out.append("]}")
    else:
        out.append(_CONTAINERS[kind])
        for i, item in enumerate(value):
            out.append("," if i else "")
            _dump(item, out, path, depth + 1)
        out.append("]" if kind is list else "]}")
    path.discard(_id(value))


def _float_text(value):
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return _float_repr(value)


def admit(value):
    """What a candidate's function may hand to the tests: plain data, or a wrapped callable or
    iterator whose own results are admitted the same way."""
    kind = _type(value)
    if kind in _FUNCTIONS:
        return guarded(value)
    if kind in _ITERATORS:
        return (admit(item) for item in value)
    if kind is range:
        return value
    dump(value)  # raises NotPlain
    return value


def guarded(function):
    """The candidate's function as the tests call it: plain arguments go in as copies (the
    candidate cannot change the tests' own objects), what comes back is admitted."""

    def call(*args, **kwargs):
        args = [_copy(a, 0) for a in args]
        kwargs = {k: _copy(v, 0) for k, v in _dict_items(kwargs)}
        return admit(function(*args, **kwargs))

    return call


def _copy(value, depth):
    """A deep copy of the plain containers in `value` (the tests' data); anything else, and
    what nests past MAX_DEPTH, as it is."""
    kind = _type(value)
    if depth >= MAX_DEPTH:
        return value
    if kind in _SEQUENCES:
        return kind(_copy(item, depth + 1) for item in value)
    if kind is _dict:
        return {_copy(k, depth + 1): _copy(v, depth + 1) for k, v in _dict_items(value)}
    if kind is _bytearray:
        return _bytearray(value)
    return value


def _import(name, globals=None, locals=None, fromlist=(), level=0, *, snapshots):
    """The tests' `import`: modules seen before the candidate ran come from their snapshots."""
    key = name if fromlist else name.partition(".")[0]
    if level == 0 and key in snapshots:
        return snapshots[key]
    return _REAL_IMPORT(name, globals, locals, fromlist, level)


def snapshot(name):
    """The tests' own copy of a module, made before the candidate runs; None if it does not
    import. A module of pure Python is imported afresh, out of sys.modules, with its package's
    submodules: its objects (json's `_default_decoder`, a class's methods) are not the ones the
    candidate can reach and patch. The interpreter's core (SHARED) and a module that will not
    import twice get a copy of their attributes instead, whose objects are shared."""
    top = name.partition(".")[0]
    if top not in SHARED and top not in _BUILTIN_MODULES:
        with contextlib.suppress(Exception):
            return _fresh(name, top)
    try:
        module = _REAL_IMPORT(name, fromlist=["_"])
    except Exception:
        return None  # the tests' own import will raise it where it belongs
    copy = types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update(module.__dict__)
    return copy


SHARED = frozenset(
    {"os", "io", "abc", "codecs", "encodings", "importlib", "site", "threading", "warnings"}
)
_BUILTIN_MODULES = frozenset(sys.builtin_module_names)


def _fresh(name, top):
    modules = sys.modules
    saved = dict(modules)
    for key in list(modules):
        if key == top or key.startswith(top + "."):
            del modules[key]
    try:
        return _REAL_IMPORT(name, fromlist=["_"])
    finally:
        modules.clear()
        modules.update(saved)


def namespace(imports):
    snapshots = {}
    for name in imports:
        for part in (name.partition(".")[0], name):
            if part not in snapshots and (found := snapshot(part)) is not None:
                snapshots[part] = found
    real = dict(_REAL_BUILTINS)

    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        return _import(name, globals, locals, fromlist, level, snapshots=snapshots)

    real["__import__"] = import_
    return {"__name__": "__main__", "__builtins__": real}


def adopt(candidate, tests):
    """Give the tests the candidate's functions (guarded), classes and plain values.

    Names the tests' namespace already has (setup's) and builtin names keep the real meaning;
    only exact-str names are read, so a key with its own __eq__ cannot replace one of ours.
    """
    for name, value in list(dict.items(candidate)):
        if _type(name) is not str or name.startswith("__") or name in tests:
            continue
        if name in tests["__builtins__"]:
            continue
        if _type(value) in _FUNCTIONS:
            tests[name] = guarded(value)
        elif isinstance(value, type):
            tests[name] = value  # its objects: only what the assertions compare is checked
        else:
            with contextlib.suppress(NotPlain):
                tests[name] = admit(value)


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
        values.append(dump(value))
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


def run(program, tests, status_fd):
    """Setup and tests' imports first, then the candidate's program, then the tests, their
    pytest-style test functions and their TestCases (both run by the harness)."""
    ns = namespace(tests["imports"])
    unittest = _unittest(ns) if tests["unittest_check"] is not None else None
    if tests["setup"]:
        exec(compile(tests["setup"], "setup", "exec"), ns)
    candidate = {"__name__": "__main__", "__builtins__": builtins}
    exec(program, candidate)
    adopt(candidate, ns)
    check = ns["__rlguard_check__"] = checker(status_fd)
    exec(marshal.loads(bytes.fromhex(tests["code"])), ns)
    for name in tests["test_functions"]:
        ns[name]()
    if unittest is not None:
        problems = run_test_cases(unittest, ns)
        check(tests["unittest_check"], ("flat", (0,)), (lambda: problems,))


def _unittest(ns):
    """The tests' unittest (its snapshot), whose `main()` does nothing: the harness runs the
    TestCases itself, after the tests, so `unittest.main()` neither exits before the end nor
    runs the bootstrap's `__main__` in place of the tests."""
    unittest = ns["__builtins__"]["__import__"]("unittest")
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
