"""The `rlguard` command's typer app: every subcommand but the client commands (cli/__init__.py
hands those to argparse before it imports this), each imported only when it runs (cli/lazy.py).
`rlguard --help` lists them all, the client commands too."""

from __future__ import annotations

import sys

import typer

from rlguard.cli import BENCH_COMMANDS, COMMANDS
from rlguard.cli.lazy import lazy_group
from rlguard.errors import InputError

app = typer.Typer(
    cls=lazy_group(COMMANDS),
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="rlguard: RLHF post-training that keeps the reward honest.",
)
bench_app = typer.Typer(
    cls=lazy_group(BENCH_COMMANDS), no_args_is_help=True, help="Benchmarks that print JSON."
)


@app.callback()
def _rlguard() -> None:
    """Every subcommand is lazy: this callback makes the app a group with none registered."""


@bench_app.callback()
def _bench() -> None:
    """As `_rlguard`, for `rlguard bench`."""


# typer vendors click (0.20 on): its usage errors derive from typer.TyperException, and importing
# click itself as well would only cost start-up time.
USAGE_ERRORS = (typer.TyperException,)


def main() -> None:
    """Entry point: usage and input errors become one line on stderr and exit code 2."""
    try:
        code = app(standalone_mode=False)
    except USAGE_ERRORS as e:
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `rlguard`: show the help
            print(message, file=sys.stderr)
        else:
            print(f"error: {' '.join(message.split())}", file=sys.stderr)
        sys.exit(2)
    except (InputError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)
