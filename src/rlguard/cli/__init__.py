"""The `rlguard` command: one subcommand per plane, each in its own module.

Errors a user can fix print one line (`error: ...`) and exit with code 2, never a traceback.
A subcommand's module is imported only when that subcommand runs (cli/lazy.py), and heavy imports
(torch, transformers) happen inside the commands that need them, so `rlguard jobs` and `--help`
stay fast.
"""

from __future__ import annotations

import sys

import typer

from rlguard.cli.lazy import lazy_group
from rlguard.errors import InputError

# in the order `rlguard --help` lists them; each line is the command's own (tests/test_cli_lazy.py)
COMMANDS = {
    "simulate": (
        "rlguard.cli.simulate:simulate",
        "Simulate EvalStop and its competitors over base schedulers (or `sweep KIND`).",
    ),
    "judge": (
        "rlguard.cli.judge:judge",
        "Judge every row; one verdict row per input row, in order; pass rates on stderr.",
    ),
    "train": (
        "rlguard.cli.train:train",
        "Train one stage (sft, reward, dpo or cgpo) from a YAML config; resumes if interrupted.",
    ),
    "serve": (
        "rlguard.cli.serve:serve",
        "Run the platform: HTTP API, scheduler and Ray executor (Ctrl-C stops it gracefully).",
    ),
    "demo": (
        "rlguard.cli.demo:demo",
        "The live platform: two tenants' lab jobs, hacking ones stopped online by EvalStop.",
    ),
    "bench": ("rlguard.cli:bench_app", "Benchmarks that print JSON."),
    "runtime": (
        "rlguard.cli.runtime:runtime_app",
        "The execution plane: one RLHF step, serverless (RLHFless) vs a serverful pool.",
    ),
    "lab": ("rlguard.cli.lab:lab_app", "The offline world where reward hacking happens."),
    "tenants": ("rlguard.cli.serve:tenants_app", "Tenants of the platform (operator)."),
    "jobs": ("rlguard.cli.jobs:jobs_app", "Submit and watch jobs on the platform."),
}
BENCH_COMMANDS = {
    "simulate": (
        "rlguard.cli.simulate:bench_simulate",
        "Time one streamed simulation of a large workload, end to end; prints JSON.",
    ),
}

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
