"""The call/answer channel between the tests' sandbox and the candidate's, executed in both.

The tests never share a process with the candidate: they call its functions through `Remote`
objects, and each call crosses a pipe as a frame (4-byte length, then JSON text) holding the
function's handle and its arguments, copied. The answer comes back the same way and is decoded by
the tests' side into exact built-in types it builds itself, so no object of the candidate's ever
exists in the tests' process. What cannot be sent by value (a class, an instance, a generator, a
callback the tests pass in) is sent as a handle: the other side gets a `Remote` that forwards
calls, attribute reads and the container protocol to the object's owner.

Each pipe has one writer (the tests' sandbox holds only the call end, the candidate's only the
answer end, in processes of different uids), so a frame's origin is the pipe it came on. Whatever
the candidate sends is checked here: framing, size, JSON, tags and handle ids; anything else is a
`WireError`, which ends the tests as a failure of the candidate (a 0), never of the judge.
Stdlib only, and no json or re import (their import would dominate a sandbox's start-up): the
C scanner and string escaper of `_json` do the text.
"""

import builtins
import os
from _json import encode_basestring_ascii as _escape
from _json import make_scanner as _make_scanner

MAX_FRAME = 1 << 24  # bytes of one message; a bigger one is malformed
MAX_DEPTH = 400  # nesting of a value sent by value; deeper is sent as a handle
_HEADER = 4
_type, _len, _str_join, _int_repr, _float_repr = type, len, str.join, int.__repr__, float.__repr__
_type_name = type.__dict__["__name__"].__get__  # bypasses a metaclass's own __name__
_BIG = 10**4000  # beyond this, decimal text is slow and the scanner refuses it: hex instead
_CONTAINERS = {list: "[", tuple: '{"t":[', set: '{"s":[', frozenset: '{"f":['}


class WireError(BaseException):
    """Traffic off the protocol, or the other side gone. A BaseException, so a test's
    `except Exception` cannot swallow it; the link stays dead afterwards."""


class TooDeep(Exception):
    """A value nests past MAX_DEPTH or holds itself: it goes as a handle."""


class NotPlain(TypeError):
    """A value that must be plain data (what an assertion compares) is not."""


# --- frames ---------------------------------------------------------------------------------


def send(fd, text):
    body = text.encode()
    data = _len(body).to_bytes(_HEADER, "big") + body
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:
        raise WireError(f"the other side is gone ({exc.strerror})") from None


def recv(fd):
    size = int.from_bytes(_read(fd, _HEADER), "big")
    if size > MAX_FRAME:
        raise WireError(f"a frame of {size} bytes (at most {MAX_FRAME})")
    try:
        return _read(fd, size).decode()
    except UnicodeDecodeError:
        raise WireError("a frame that is not UTF-8") from None


def _read(fd, size):
    chunks, left = [], size
    while left:
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except OSError as exc:
            raise WireError(f"the other side is gone ({exc.strerror})") from None
        if not chunk:
            raise WireError("the other side is gone")
        chunks.append(chunk)
        left -= _len(chunk)
    return b"".join(chunks)


# --- values ---------------------------------------------------------------------------------


def encode(value, link):
    """JSON text of a value: plain data by value, an instance of a class both sides define (the
    row's setup classes) by its attributes, the other side's own objects by their id, anything
    else (and data that nests too deep) as a handle to an object of ours.

    Without a link, plain data only (exact built-in types, read without running any method of
    theirs): anything else raises NotPlain."""
    out = []
    try:
        _encode(value, out, set(), 0, link)
    except TooDeep:
        if link is None:
            raise NotPlain("a container that holds itself, or nests too deep") from None
        return f'{{"h":{link.export(value)}}}'
    return _str_join("", out)


def _encode(value, out, path, depth, link):
    kind = _type(value)
    if value is None or kind is bool:
        out.append("null" if value is None else "true" if value else "false")
    elif kind is int:
        out.append(_int_repr(value) if -_BIG < value < _BIG else f'{{"i":"{hex(value)}"}}')
    elif kind is float:
        out.append(_float_text(value))
    elif kind is str:
        out.append(_escape(value))
    elif kind is bytes or kind is bytearray:
        out.append(f'{{"{"b" if kind is bytes else "a"}":"{value.hex()}"}}')
    elif kind is complex:
        out.append(f'{{"c":[{_float_text(value.real)},{_float_text(value.imag)}]}}')
    elif kind in _CONTAINERS or kind is dict:
        _encode_container(value, kind, out, path, depth, link)
    elif link is None:
        raise NotPlain(f"{_type_name(kind)} is not plain data (exact built-in types only)")
    elif kind is Remote and object.__getattribute__(value, "_link") is link:
        out.append(f'{{"y":{object.__getattribute__(value, "_id")}}}')
    elif (attributes := _shared_attributes(value, kind, link)) is not None:
        out.append(f'{{"o":[{_escape(_type_name(kind))},')
        _encode_container(attributes, dict, out, path, depth, link)
        out.append("]}")
    else:
        out.append(f'{{"h":{link.export(value)}}}')


def _shared_attributes(value, kind, link):
    """The attributes of an instance of a class both sides define, None for any other value."""
    if _type_name(kind) not in link.shared or kind.__dict__.get("__module__") != "__main__":
        return None
    try:
        attributes = object.__getattribute__(value, "__dict__")
    except AttributeError:  # __slots__: sent as a handle
        return None
    return attributes if _type(attributes) is dict else None


def _encode_container(value, kind, out, path, depth, link):
    if id(value) in path or depth >= MAX_DEPTH:
        raise TooDeep
    path.add(id(value))
    if kind is dict:
        out.append('{"d":[')
        for i, (key, item) in enumerate(dict.items(value)):
            out.append(",[" if i else "[")
            _encode(key, out, path, depth + 1, link)
            out.append(",")
            _encode(item, out, path, depth + 1, link)
            out.append("]")
        out.append("]}")
    else:
        out.append(_CONTAINERS[kind])
        for i, item in enumerate(value):
            out.append("," if i else "")
            _encode(item, out, path, depth + 1, link)
        out.append("]" if kind is list else "]}")
    path.discard(id(value))


def _float_text(value):
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return _float_repr(value)


class _ScanContext:
    """What `_json.make_scanner` reads: strict JSON, ints and floats as Python's own."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = None

    @staticmethod
    def parse_constant(name):
        return float(name)  # NaN, Infinity, -Infinity


_scan = _make_scanner(_ScanContext())


def parse(text):
    """The JSON structure of a frame; anything but one well-formed JSON value is a WireError."""
    try:
        value, end = _scan(text, 0)
    except Exception as exc:  # StopIteration, JSONDecodeError, RecursionError, SystemError...
        raise WireError(f"a frame that is not JSON ({_type_name(_type(exc))})") from None
    if end != _len(text):
        raise WireError("a frame with bytes after its JSON value")
    return value


def _decode_tagged(tag, body, decoder):
    if tag == "t":
        return tuple(decoder.items(body))
    if tag == "s":
        return set(decoder.items(body))
    if tag == "f":
        return frozenset(decoder.items(body))
    if tag == "d":
        return {decoder.value(k): decoder.value(v) for k, v in decoder.pairs(body)}
    if tag == "b" or tag == "a":
        return (bytes if tag == "b" else bytearray).fromhex(decoder.text(body))
    if tag == "c":
        real, imag = decoder.items(body)
        if _type(real) is not float or _type(imag) is not float:
            raise WireError("a complex number of non-floats")
        return complex(real, imag)
    if tag == "i":
        return int(decoder.text(body), 16)
    if tag == "o":
        return decoder.shared_object(body)
    if tag == "h":
        return decoder.remote(body)
    if tag == "y" and decoder.link is not None:
        return decoder.link.own(body)
    raise WireError(f"an unknown tag {tag[:20]!r}")


class Decoder:
    """Rebuilds one message's values out of exact built-in types; `remotes` counts the handles
    it made (an answer holding one is not plain data). Without a link, plain data only."""

    def __init__(self, link):
        self.link = link
        self.remotes = 0

    def value(self, data, depth=0):
        kind = _type(data)
        if data is None or kind in (bool, int, float, str):
            return data
        if depth > MAX_DEPTH + 2:
            raise WireError("a value nested too deep")
        if kind is list:
            return [self.value(x, depth + 1) for x in data]
        if kind is not dict or _len(data) != 1:
            raise WireError("a malformed value")
        [(tag, body)] = data.items()
        try:
            return _decode_tagged(tag, body, _Nested(self, depth + 1))
        except WireError:
            raise
        except (TypeError, ValueError, OverflowError, AttributeError) as exc:
            raise WireError(f"a malformed {tag[:20]!r} value: {_type_name(_type(exc))}") from None

    def remote(self, body):
        if self.link is None:
            raise WireError("a handle where plain data was expected")
        if _type(body) is not int or body < 0:
            raise WireError("a malformed handle")
        self.remotes += 1
        return Remote(self.link, body)


class _Nested:
    """The decoder one level down, with the checks a tagged body needs."""

    def __init__(self, decoder, depth):
        self.decoder, self.depth, self.link = decoder, depth, decoder.link

    def value(self, data):
        return self.decoder.value(data, self.depth)

    def items(self, body):
        if _type(body) is not list:
            raise WireError("a container body that is not a list")
        return [self.value(x) for x in body]

    def pairs(self, body):
        if _type(body) is not list or any(_type(p) is not list or _len(p) != 2 for p in body):
            raise WireError("a dict body that is not a list of pairs")
        return body

    def text(self, body):
        if _type(body) is not str:
            raise WireError("a text body that is not a string")
        return body

    def remote(self, body):
        return self.decoder.remote(body)

    def shared_object(self, body):
        """An instance of a class both sides define (a row's `ListNode`), rebuilt from our own
        class: its attributes are set, none of its methods runs."""
        if _type(body) is not list or _len(body) != 2 or _type(body[0]) is not str:
            raise WireError("a malformed object")
        cls = self.link.shared.get(body[0]) if self.link is not None else None
        if cls is None:
            raise WireError(f"an object of a class that is not shared: {body[0][:40]!r}")
        attributes = self.value(body[1])
        if _type(attributes) is not dict or any(_type(k) is not str for k in attributes):
            raise WireError("an object whose attributes are not a dict of names")
        instance = object.__new__(cls)
        object.__getattribute__(instance, "__dict__").update(attributes)
        return instance


# --- the link -------------------------------------------------------------------------------


# what a Remote forwards, and how its owner carries it out
OPERATIONS = {
    "call": lambda target, *args, **kwargs: target(*args, **kwargs),
    "getattr": getattr,
    "setattr": setattr,
    "iter": iter,
    "next": next,
    "len": len,
    "bool": bool,
    "repr": repr,
    "str": str,
    "getitem": lambda target, key: target[key],
    "setitem": lambda target, key, value: target.__setitem__(key, value),
    "contains": lambda target, item: item in target,
}


class Link:
    """One side of the channel: our objects the other side holds handles to, and the loop that
    sends a request and serves the other side's requests until the answer comes.

    `served` names the operations the other side may ask of our objects (and `private`, whether
    it may read their `_names`); `shared` maps the names of the classes both sides define to
    ours; `local` serves the other kinds of request (stdin, stdout) this side answers."""

    def __init__(self, read_fd, write_fd, served, shared, local=None, private=True):
        self.read_fd, self.write_fd = read_fd, write_fd
        self.served, self.shared, self.local = served, shared, local or {}
        self.private = private
        self.objects = []  # a handle is an index here; kept alive while the link lives
        self.dead = None  # the first WireError: every later request raises it again

    def export(self, value):
        self.objects.append(value)
        return _len(self.objects) - 1

    def own(self, body):
        if _type(body) is not int or not 0 <= body < _len(self.objects):
            raise WireError("a handle to an object we never sent")
        return self.objects[body]

    def send(self, text):
        self.check()
        try:
            send(self.write_fd, text)
        except WireError as exc:
            self.dead = exc
            raise

    def broken(self, why):
        """Ends the link: the WireError to raise, which every later use raises again."""
        self.dead = WireError(why)
        return self.dead

    def check(self):
        if self.dead is not None:
            raise WireError(*self.dead.args)

    def request(self, text):
        """Send a request; serve the other side's until the answer: (value, the answer's text,
        how many handles it holds)."""
        self.send(text)
        while True:
            raw, message = self.receive()
            kind = message[0]
            if kind == "ok":
                decoder = Decoder(self)
                return self.decoded(decoder, message[1:]), raw, decoder.remotes
            if kind == "err":
                raise self.error(message)
            if (reply := self.serve(message)) is not None:
                self.send(reply)

    def receive(self):
        """The next message: its text and its JSON, a [kind, ...] list."""
        self.check()
        try:
            raw = recv(self.read_fd)
            message = parse(raw)
            if _type(message) is not list or not message or _type(message[0]) is not str:
                raise WireError("a message that is not a [kind, ...] list")
            return raw, message
        except WireError as exc:
            self.dead = exc
            raise

    def decoded(self, decoder, values):
        try:
            if _len(values) != 1:
                raise WireError("an answer without exactly one value")
            return decoder.value(values[0])
        except WireError as exc:
            self.dead = exc
            raise

    def serve(self, message):
        """The other side's request, carried out: an ["ok", value] or ["err", ...] to send (None:
        a request that wants no answer, like forwarded output)."""
        kind = message[0]
        if kind in self.local:
            return self.local[kind](self, message)
        if kind != "op" or _len(message) != 5 or message[1] not in self.served:
            raise self.broken(f"a request this side does not serve: {str(message)[:80]}")
        _, name, target, args, kwargs = message
        decoder = Decoder(self)
        target = self.decoded(decoder, [{"y": target}])
        args, kwargs = self.decoded(decoder, [args]), self.decoded(decoder, [kwargs])
        if _type(args) is not list or _type(kwargs) is not dict:
            raise self.broken("malformed call arguments")
        if name == "getattr" and not self.private and str(args[0] if args else "")[:1] == "_":
            return self.failure(AttributeError("private attributes are not served"))
        try:
            return f'["ok",{encode(OPERATIONS[name](target, *args, **kwargs), self)}]'
        except BaseException as exc:  # the operation's, or a MemoryError encoding its result
            return self.failure(exc)

    def failure(self, exc):
        """["err", builtin class name, args, where]: the nearest built-in exception class."""
        cls = next(c for c in _type(exc).__mro__ if getattr(builtins, c.__name__, None) is c)
        try:
            args = encode(list(exc.args), self)
        except MemoryError:
            args = "[]"
        return f'["err",{_escape(cls.__name__)},{args},{_escape(where(exc))}]'

    def error(self, message):
        """The other side's exception, raised here as the built-in class it names."""
        if _len(message) != 4 or _type(message[1]) is not str or _type(message[3]) is not str:
            raise self.broken("a malformed error")
        cls = getattr(builtins, message[1], None)
        if not (_type(cls) is type and issubclass(cls, BaseException)):
            cls = Exception
        args = self.decoded(Decoder(self), [message[2]])
        exc = _exception(cls, args if _type(args) is list else [])
        exc.rlguard_where = message[3][:200]
        return exc

    def operate(self, name, target, args=(), kwargs=None):
        """One operation on the other side's object: (value, answer text, handles, the
        arguments' text)."""
        arguments = f"{encode(list(args), self)},{encode(kwargs or {}, self)}"
        handle = object.__getattribute__(target, "_id")
        return (*self.request(f'["op",{_escape(name)},{handle},{arguments}]'), arguments)


def _exception(cls, args):
    """cls(*args), or as near as the class allows (UnicodeDecodeError wants five arguments)."""
    for attempt in (args, [", ".join(map(str, args))], []):
        try:
            return cls(*attempt)
        except Exception:
            continue
    return Exception(*args)


def where(exc):
    """'File "program.py", line N': the innermost frame of the candidate's program an exception
    passed (for the reason a human reads); empty when none did."""
    if _type(exc) is SyntaxError and exc.filename == "program.py":
        return f'File "program.py", line {exc.lineno}'
    found, tb = "", exc.__traceback__
    try:
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "program.py":
                found = f'File "program.py", line {tb.tb_lineno}'
            tb = tb.tb_next
    except PermissionError:  # the tests' side refuses frames; its own errors name no program line
        return ""
    return found


class Remote:
    """An object that lives on the other side; every use is one request there. A module-level
    function of the candidate's (`pure`) must answer the same arguments the same way each time:
    a program that counts calls to answer a repeated assertion differently is caught here."""

    __slots__ = ("_answers", "_id", "_link")

    def __init__(self, link, handle, pure=False):
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_id", handle)
        object.__setattr__(self, "_answers", {} if pure else None)

    def _do(self, name, *args, **kwargs):
        return self._link.operate(name, self, args, kwargs)[0]

    def __call__(self, *args, **kwargs):
        value, answer, remotes, arguments = self._link.operate("call", self, args, kwargs)
        answers = self._answers
        if answers is not None and not remotes:
            first = answers.setdefault(arguments, (value, answer))
            if first[1] != answer and first[0] != value:
                raise self._link.broken("the same call was answered two ways")
        return value

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._do("getattr", name)

    def __setattr__(self, name, value):
        self._do("setattr", name, value)

    def __iter__(self):
        return self._do("iter")

    def __next__(self):
        return self._do("next")

    def __len__(self):
        return self._do("len")

    def __bool__(self):
        return self._do("bool")

    def __repr__(self):
        return self._do("repr")

    def __str__(self):
        return self._do("str")

    def __getitem__(self, key):
        return self._do("getitem", key)

    def __setitem__(self, key, value):
        self._do("setitem", key, value)

    def __contains__(self, item):
        return self._do("contains", item)
