"""The `rlguard` command: one subcommand per plane, each in its own module.

Errors a user can fix print one line (`error: ...`) and exit with code 2, never a traceback.
A subcommand's module is imported only when that subcommand runs, and heavy imports (torch,
transformers) happen inside the commands that need them. The client commands (`jobs`,
`tenants`) are on argparse (cli/argparsing.py) and are handed over before typer is imported,
so they start in a fraction of what typer alone costs; every other command is typer's
(cli/typer_app.py, its lazy group cli/lazy.py). This module imports neither.
"""

from __future__ import annotations

import sys
from importlib import import_module

# in the order `rlguard --help` lists them; each line is the command's own (tests/test_cli_lazy.py).
# A target "module:attribute" is a typer command or app; a bare "module" is a client command, its
# `group` an argparse Group (cli/argparsing.py).
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
    "bench": ("rlguard.cli.typer_app:bench_app", "Benchmarks that print JSON."),
    "runtime": (
        "rlguard.cli.runtime:runtime_app",
        "The execution plane: one RLHF step, serverless (RLHFless) vs a serverful pool.",
    ),
    "lab": ("rlguard.cli.lab:lab_app", "The offline world where reward hacking happens."),
    "tenants": ("rlguard.cli.tenants", "Tenants of the platform (operator)."),
    "jobs": ("rlguard.cli.jobs", "Submit and watch jobs on the platform."),
}
BENCH_COMMANDS = {
    "simulate": (
        "rlguard.cli.simulate:bench_simulate",
        "Time one streamed simulation of a large workload, end to end; prints JSON.",
    ),
}


def is_client_command(target: str) -> bool:
    return ":" not in target


def main() -> None:
    """Entry point: usage and input errors become one line on stderr and exit code 2."""
    argv = sys.argv[1:]
    if argv and argv[0] in COMMANDS and is_client_command(COMMANDS[argv[0]][0]):
        from rlguard.cli.argparsing import run

        sys.exit(run(import_module(COMMANDS[argv[0]][0]).group, argv[1:]))
    from rlguard.cli.typer_app import main as typer_main

    typer_main()
