"""`rlguard` imports a subcommand's module only when that subcommand runs: `rlguard jobs --help`
loads neither torch, Ray, scipy nor the cluster's engine, and `rlguard --help` still lists every
command with its own help line."""

import inspect

import pytest
import typer

from cli_runner import cli
from import_graph import imported_after
from rlguard.cli import BENCH_COMMANDS, COMMANDS, app
from rlguard.cli.lazy import Unloaded, load
from rlguard.cli.runtime import BENCH

HEAVY = ("torch", "ray", "scipy", "transformers", "rlguard.cluster.engine", "rlguard.runtime.sim")
LAZY = {
    **{("rlguard", name): entry for name, entry in COMMANDS.items()},
    **{("bench", name): entry for name, entry in BENCH_COMMANDS.items()},
    ("runtime", "bench"): BENCH,
}


def loaded_after(*argv: str) -> set[str]:
    """Which of HEAVY and of rlguard.cli's modules `rlguard ARGV` imported, in a fresh process."""
    code = f"import sys\nsys.argv = ['rlguard', *{argv!r}]\nfrom rlguard.cli import main\nmain()"
    return imported_after(code, (*HEAVY, "rlguard.cli."))


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (("jobs", "--help"), {"rlguard.cli.jobs"}),
        (("tenants", "--help"), {"rlguard.cli.serve", "rlguard.cli.options"}),
        (("--help",), set()),
    ],
)
def test_a_command_imports_only_its_own_module(argv, modules):
    assert loaded_after(*argv) == modules | {"rlguard.cli.lazy"}


def first_paragraph(command) -> str:
    text = inspect.cleandoc(command.short_help or command.help or "")
    return text.split("\n\n")[0].replace("\n", " ").strip()


@pytest.mark.parametrize(("where", "name"), sorted(LAZY))
def test_each_listed_help_line_is_the_commands_own(where, name):
    target, help_line = LAZY[where, name]
    assert help_line == first_paragraph(load(name, target))


def test_the_help_lists_every_command_unloaded(monkeypatch, capsys):
    group = typer.main.get_command(app)
    assert list(group.commands) == list(COMMANDS)
    assert all(isinstance(c, Unloaded) for c in group.commands.values())
    code, out, _ = cli(monkeypatch, capsys, "--help")
    assert code == 0
    for name, (_, help_line) in COMMANDS.items():
        assert name in out and help_line[:30] in out
