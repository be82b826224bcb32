"""The candidate's sandbox: runs the program, then answers the tests' calls. Executed by the
bootstrap after `_sandbox_wire.py` in the same namespace (never imported).

This process holds the candidate's program and nothing else: no test, no expected value, no
nonce, no status channel to the judge, only its end of the call/answer pipes. The program runs as
`__main__`; its stdout is forwarded to the tests' side with each answer (where the tests may be
capturing it) and its stdin is read from the tests' side on demand (where the tests may have fed
it). Then it sends its top-level names: plain values by value, functions, classes and other
objects as handles the tests call through.
"""

import builtins
import sys
import types

FLUSH_AT = 1 << 16  # bytes of stdout held before they are forwarded


class ForwardedStdout:
    """sys.stdout: text goes to the tests' side before each answer (or once FLUSH_AT is held)."""

    def __init__(self, link):
        self.link, self.held, self.size = link, [], 0

    def write(self, text):
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.held.append(text)
        self.size += len(text)
        if self.size >= FLUSH_AT:
            self.flush()
        return len(text)

    def flush(self):
        if self.held:
            text, self.held, self.size = "".join(self.held), [], 0
            self.link.send(f'["out",{encode(text, self.link)}]')

    def writable(self):
        return True

    def isatty(self):
        return False


class ForwardedStdin:
    """sys.stdin: each read asks the tests' side, which reads its own sys.stdin."""

    def __init__(self, link):
        self.link = link

    def _ask(self, how, size):
        value = self.link.request(f'["in",{encode(how, self.link)},{int(size)}]')[0]
        if type(value) is not str:
            raise OSError("stdin answered with something other than text")
        return value

    def read(self, size=-1):
        return self._ask("read", -1 if size is None else size)

    def readline(self, size=-1):
        return self._ask("readline", -1 if size is None else size)

    def readlines(self, hint=-1):
        return list(iter(self.readline, ""))

    def __iter__(self):
        return iter(self.readline, "")

    def fileno(self):
        raise OSError("stdin is the tests' own")

    def isatty(self):
        return False


def _exported_names(ns):
    """The program's top-level names as one JSON dict, modules by name (the tests' side imports
    its own copy), everything else through `encode`."""
    parts = []
    for name, value in list(dict.items(ns)):
        if type(name) is not str or name.startswith("__"):
            continue
        if type(value) is types.ModuleType:
            text = f'{{"m":{encode(value.__name__, LINK)}}}'
        else:
            text = encode(value, LINK)
        parts.append(f"[{encode(name, LINK)},{text}]")
    return f'{{"d":[{",".join(parts)}]}}'


LINK = None


def serve(source, config):
    """Run the program, send ["ready", names] (or the error that stopped it), then answer until
    the tests' side hangs up."""
    global LINK
    read_fd, write_fd = config["link"]
    LINK = link = Link(read_fd, write_fd, frozenset(OPERATIONS), {}, private=True)
    sys.stdout, sys.stdin = ForwardedStdout(link), ForwardedStdin(link)
    ns = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(source, "program.py", "exec", dont_inherit=True), ns)
        shared = config["shared"]
        link.shared = {name: ns[name] for name in shared if isinstance(ns.get(name), type)}
        reply = f'["ready",{_exported_names(ns)}]'
    except BaseException as exc:
        reply = link.failure(exc)
    while True:
        sys.stdout.flush()
        link.send(reply)
        try:
            _, message = link.receive()
        except WireError:
            return  # the tests are done (or gone)
        reply = link.serve(message)
