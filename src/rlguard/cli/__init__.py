"""The `rlguard` command: one subcommand per plane, each in its own module.

Errors a user can fix print one line (`error: ...`) and exit with code 2, never a traceback.
Heavy imports (torch, transformers) happen inside the commands that need them, so `rlguard
simulate` and `--help` stay fast.
"""

from __future__ import annotations

import sys

import click
import typer

from rlguard.cli import demo, judge, runtime_bench, serve, simulate, train
from rlguard.cli.jobs import jobs_app
from rlguard.cli.lab import lab_app
from rlguard.cli.runtime import runtime_app
from rlguard.errors import InputError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="rlguard: RLHF post-training that keeps the reward honest.",
)
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print JSON.")
app.add_typer(bench_app, name="bench")
app.command()(simulate.simulate)
app.command()(judge.judge)
app.command()(train.train)
bench_app.command("simulate")(simulate.bench_simulate)
app.add_typer(runtime_app, name="runtime")
app.add_typer(lab_app, name="lab")
runtime_app.command("bench")(runtime_bench.bench)
app.command()(serve.serve)
app.command()(demo.demo)
app.add_typer(serve.tenants_app, name="tenants")
app.add_typer(jobs_app, name="jobs")


# typer >= 0.20 vendors click: its usage errors derive from typer.TyperException, not click's.
USAGE_ERRORS = (click.ClickException, getattr(typer, "TyperException", click.ClickException))


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
