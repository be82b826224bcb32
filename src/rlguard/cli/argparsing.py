"""The client commands' command line (`rlguard jobs ...`, `rlguard tenants ...`) on the standard
library's argparse rather than typer: typer and the pydantic it validates options with cost
more to import than a client command does in all (benchmarks/bench_cli_start.py). The rest of
`rlguard` stays on typer (cli/typer_app.py); `rlguard.cli.main` hands these commands over
before it imports typer.

A group is a named set of commands; each command is a function and the parameters it takes
(`Arg`, `Opt`, `Flag`), its help the docstring's first paragraph. Bad usage is what typer says
for it, as one line `error: ...` on stderr and exit code 2 (argparse's own error prints its usage
too); so is an `InputError` (or ValueError) a command raises. `--help` anywhere prints help and
exits 0; a group with no command prints its help and exits 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlguard.errors import InputError


class UsageError(Exception):
    """Bad usage of a client command: its message is typer's for the same mistake."""


# ----- values: parsed as typer (pydantic) parses them, with its messages ----------------------


def integer(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An int option (within [low, high] where given)."""

    def parse(text: str) -> int:
        found = re.fullmatch(r"\s*([+-]?[0-9](?:_?[0-9])*)(?:\.0+)?\s*", text)
        if found is None:
            raise argparse.ArgumentTypeError(
                "Input should be a valid integer, unable to parse string as an integer"
            )
        value = int(found[1])
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"Input should be greater than or equal to {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"Input should be less than or equal to {high}")
        return value

    parse.metavar = "INTEGER"  # type: ignore[attr-defined]
    parse.bounds = (low, high)  # type: ignore[attr-defined]
    return parse


def number(text: str) -> float:
    """A float option (nan and inf too, as pydantic reads them)."""
    try:
        if text.isascii():
            return float(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(
        "Input should be a valid number, unable to parse string as a number"
    )


number.metavar = "FLOAT"  # type: ignore[attr-defined]
METAVARS: dict[Any, str] = {str: "TEXT", Path: "PATH"}


# ----- parameters ---------------------------------------------------------------------------


class Arg:
    """A positional argument (`dest` as the function names it, shown upper-cased)."""

    def __init__(
        self, dest: str, help: str, type: Callable[[str], Any] = str, required: bool = True
    ) -> None:
        self.dest, self.help, self.type, self.required = dest, help, type, required

    def add(self, parser: argparse.ArgumentParser) -> None:
        help = self.help + (" [required]" if self.required else "")
        parser.add_argument(
            self.dest, nargs="?", type=self.type, metavar=self.dest.upper(), help=_literal(help)
        )

    def missing(self) -> str:
        return f"Missing argument '{self.dest}'."


class Opt:
    """An option with a value (`--estimate-s` is `estimate_s` to the function)."""

    def __init__(
        self,
        flag: str,
        help: str,
        type: Callable[[str], Any] = str,
        default: Any = None,
        required: bool = False,
    ) -> None:
        self.flag, self.help, self.type = flag, help, type
        self.default, self.required = default, required
        self.dest = flag.lstrip("-").replace("-", "_")

    def add(self, parser: argparse.ArgumentParser) -> None:
        notes = [] if self.default is None else [f"default: {self.default}"]
        low, high = getattr(self.type, "bounds", (None, None))
        if low is not None or high is not None:
            notes.append(
                "".join(
                    ("" if low is None else f"{low}<=", "x", "" if high is None else f"<={high}")
                )
            )
        if self.required:
            notes.append("required")
        help = self.help + (f" [{'; '.join(notes)}]" if notes else "")
        metavar = getattr(self.type, "metavar", None) or METAVARS.get(self.type, "VALUE")
        parser.add_argument(
            self.flag,
            dest=self.dest,
            type=self.type,
            default=self.default,
            metavar=metavar,
            help=_literal(help),
        )

    def missing(self) -> str:
        return f"Missing option '{self.flag}'."


class Flag:
    """A boolean option, off by default: `--x/--no-x` as typer makes it, or only `--x`
    (`negatable=False`, as `--json`)."""

    def __init__(self, flag: str, help: str, dest: str | None = None, negatable: bool = True):
        self.flag, self.help, self.negatable = flag, help, negatable
        self.dest = dest or flag.lstrip("-").replace("-", "_")
        self.required = False

    def add(self, parser: argparse.ArgumentParser) -> None:
        action = argparse.BooleanOptionalAction if self.negatable else "store_true"
        help = _literal(self.help)
        parser.add_argument(self.flag, dest=self.dest, action=action, default=False, help=help)


Param = Arg | Opt | Flag


def _literal(help: str) -> str:
    """A help line as argparse prints it: it %-formats help lines."""
    return help.replace("%", "%%")


def json_flag(help: str = "print JSON") -> Flag:
    return Flag("--json", help, dest="json_out", negatable=False)


# ----- groups and commands ------------------------------------------------------------------


def first_paragraph(doc: str | None) -> str:
    text = (doc or "").strip().split("\n\n")[0]
    return " ".join(text.split())


class Command:
    def __init__(self, name: str, prog: str, function: Callable[..., Any], params: list[Param]):
        self.name, self.prog, self.function, self.params = name, prog, function, params
        self.help = first_paragraph(function.__doc__)

    def parser(self) -> _Parser:
        shown = [
            p.dest.upper() if p.required else f"[{p.dest.upper()}]"
            for p in self.params
            if isinstance(p, Arg)
        ]
        parser = _Parser(
            prog=self.prog,
            usage=" ".join([self.prog, "[OPTIONS]", *shown]),
            description=" ".join((self.function.__doc__ or "").split()),
        )
        for param in self.params:
            param.add(parser)
        parser.add_argument("--help", action="help", help="Show this message and exit.")
        return parser

    def run(self, argv: list[str]) -> Any:
        parser = self.parser()
        options = argv[: argv.index("--")] if "--" in argv else argv
        if "--help" in options:  # as typer: before anything else is looked at
            parser.print_help()
            return 0
        try:
            namespace, extra = parser.parse_known_args(argv)
        except argparse.ArgumentError as e:
            raise UsageError(_usage_message(e)) from None
        _check_extra(parser, extra)
        values = vars(namespace)
        for param in self.params:
            if param.required and values[param.dest] is None:
                raise UsageError(param.missing())
        return self.function(**values)


class Group:
    """`rlguard NAME COMMAND ...`: commands registered with `@group.command(*params)`."""

    def __init__(self, name: str, description: str) -> None:
        self.name, self.description = name, description
        self.commands: dict[str, Command] = {}

    def command(self, *params: Param, name: str | None = None) -> Callable[[Callable], Callable]:
        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            command = name or function.__name__.replace("_", "-")
            prog = f"rlguard {self.name} {command}"
            self.commands[command] = Command(command, prog, function, list(params))
            return function

        return register

    def help(self) -> str:
        import shutil
        import textwrap

        indent = " " * (max(len(name) for name in self.commands) + 4)
        width = max(shutil.get_terminal_size().columns - 2, len(indent) + 30)
        lines = [f"usage: rlguard {self.name} COMMAND [ARGS]...", "", self.description, ""]
        lines.append("commands:")
        for name, command in self.commands.items():
            first = f"  {name}".ljust(len(indent)) + command.help
            lines += textwrap.wrap(first, width, subsequent_indent=indent)
        lines += ["", f"`rlguard {self.name} COMMAND --help` shows a command's options."]
        return "\n".join(lines)

    def dispatch(self, argv: list[str]) -> int:
        if not argv:  # as typer's no_args_is_help: the help, and exit code 2
            print(self.help())
            return 2
        name, rest = argv[0], argv[1:]
        if name == "--help":
            print(self.help())
            return 0
        if name.startswith("-"):
            raise UsageError(f"No such option: {name}")
        if name not in self.commands:
            from difflib import get_close_matches

            close = get_close_matches(name, list(self.commands))
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UsageError(f"No such command {name!r}.{hint}")
        self.commands[name].run(rest)
        return 0


def run(group: Group, argv: list[str]) -> int:
    """Run `rlguard GROUP ARGV`: the exit code; bad usage or input is one line on stderr."""
    try:
        return group.dispatch(argv)
    except UsageError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
    except (InputError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C (`jobs events --follow`): no traceback
        return 130
    return 2


class _Parser(argparse.ArgumentParser):
    def __init__(self, prog: str, usage: str, description: str) -> None:
        super().__init__(
            prog=prog,
            usage=usage,
            description=description,
            add_help=False,
            allow_abbrev=False,  # as typer: `--jso` is not `--json`
            exit_on_error=False,
        )

    def error(self, message: str) -> Any:  # argparse's last resort: never its usage + exit
        raise UsageError(message)


def _usage_message(error: argparse.ArgumentError) -> str:
    """Typer's words for what argparse found wrong with an option's value."""
    name = (error.argument_name or "").split("/")[0]
    if error.message.startswith("expected one argument"):
        return f"Option {name!r} requires an argument."
    if error.message.startswith("ignored explicit argument"):
        return f"Option {name!r} does not take a value."
    return f"Invalid value for {name!r}: {error.message}"


def _check_extra(parser: argparse.ArgumentParser, extra: list[str]) -> None:
    """Typer's words for arguments nothing took: an unknown option, or extra arguments."""
    for arg in extra:
        if arg.startswith("-") and arg != "-":
            option = arg.split("=")[0]
            known = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
            from difflib import get_close_matches

            close = sorted(get_close_matches(option, known)) if option.startswith("--") else []
            hint = f" (Possible options: {', '.join(close)})" if close else ""
            raise UsageError(f"No such option: {option}{hint}")
    if extra:
        raise UsageError(f"Got unexpected extra argument(s) ({' '.join(extra)})")
