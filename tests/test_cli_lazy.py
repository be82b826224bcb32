"""`rlguard` imports a subcommand's module only when that subcommand runs: `rlguard jobs --help`
loads neither torch, Ray, scipy nor the cluster's engine, the client commands (`jobs`, `tenants`)
not even typer, pydantic, httpx or rich, and `rlguard --help` still lists every command with its
own help line."""

import inspect
from importlib import import_module

import pytest
import typer

from cli_runner import cli, one_line_exit_2
from import_graph import imported_after
from rlguard.cli import BENCH_COMMANDS, COMMANDS, is_client_command
from rlguard.cli.lazy import Unloaded, load
from rlguard.cli.runtime import BENCH
from rlguard.cli.typer_app import app

HEAVY = ("torch", "ray", "scipy", "transformers", "rlguard.cluster.engine", "rlguard.runtime.sim")
TYPER_AND_CO = ("typer", "click", "pydantic", "httpx", "rich")
CLIENT = {name for name, (target, _) in COMMANDS.items() if is_client_command(target)}
LAZY = {
    **{("rlguard", name): entry for name, entry in COMMANDS.items()},
    **{("bench", name): entry for name, entry in BENCH_COMMANDS.items()},
    ("runtime", "bench"): BENCH,
}


def loaded_after(*argv: str, watched=(*HEAVY, "rlguard.cli.")) -> set[str]:
    """Which of `watched` (HEAVY and rlguard.cli's modules) `rlguard ARGV` imported, in a fresh
    process whose platform is a closed port on loopback."""
    code = (
        "import os, sys\n"
        "os.environ.update(RLGUARD_URL='http://127.0.0.1:9', RLGUARD_API_KEY='x')\n"
        f"sys.argv = ['rlguard', *{argv!r}]\nfrom rlguard.cli import main\nmain()"
    )
    return imported_after(code, watched)


@pytest.mark.parametrize(
    ("argv", "modules"),
    [
        (("jobs", "--help"), {"rlguard.cli.jobs", "rlguard.cli.argparsing"}),
        (("tenants", "--help"), {"rlguard.cli.tenants", "rlguard.cli.argparsing"}),
        (("--help",), {"rlguard.cli.typer_app", "rlguard.cli.lazy"}),
    ],
)
def test_a_command_imports_only_its_own_module(argv, modules):
    assert loaded_after(*argv) == modules


@pytest.mark.parametrize(
    "argv", [("jobs", "list"), ("jobs", "--help"), ("tenants", "--help"), ("tenants",)]
)
def test_the_client_commands_start_without_typer_pydantic_httpx_or_rich(argv):
    """`jobs list` gets as far as connecting (to a closed port): its client is imported too."""
    assert loaded_after(*argv, watched=TYPER_AND_CO) == set()


def test_jobs_list_imports_the_client_and_reaches_the_platform(monkeypatch, capsys):
    assert "rlguard.platform.client" in loaded_after("jobs", "list", watched=("rlguard.",))
    monkeypatch.setenv("RLGUARD_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("RLGUARD_API_KEY", "x")
    code, out, err = cli(monkeypatch, capsys, "jobs", "list", "--json")
    one_line_exit_2(code, out, err, "cannot reach the platform at http://127.0.0.1:9")


def first_paragraph(command) -> str:
    text = inspect.cleandoc(command.short_help or command.help or "")
    return text.split("\n\n")[0].replace("\n", " ").strip()


@pytest.mark.parametrize(("where", "name"), sorted(LAZY))
def test_each_listed_help_line_is_the_commands_own(where, name):
    target, help_line = LAZY[where, name]
    assert help_line == first_paragraph(load(name, target))
    if is_client_command(target):  # an argparse group: its own description
        assert help_line == import_module(target).group.description


def test_the_help_lists_every_command_unloaded(monkeypatch, capsys):
    assert sorted(CLIENT) == ["jobs", "tenants"]
    group = typer.main.get_command(app)
    assert list(group.commands) == list(COMMANDS)
    assert all(isinstance(c, Unloaded) for c in group.commands.values())
    code, out, _ = cli(monkeypatch, capsys, "--help")
    assert code == 0
    for name, (_, help_line) in COMMANDS.items():
        assert name in out and help_line[:30] in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("jobs", "nope"), "error: No such command 'nope'."),
        (("jobs", "lst"), "error: No such command 'lst'. Did you mean 'list'?"),
        (("jobs", "--json"), "error: No such option: --json"),
        (("jobs", "list", "--jso"), "error: No such option: --jso (Possible options: --json)"),
        (("jobs", "list", "extra"), "error: Got unexpected extra argument(s) (extra)"),
        (("jobs", "list", "--limit"), "error: Option '--limit' requires an argument."),
        (("jobs", "list", "--json=1"), "error: Option '--json' does not take a value."),
        (
            ("jobs", "list", "--limit", "0"),
            "error: Invalid value for '--limit': Input should be greater than or equal to 1",
        ),
        (
            ("jobs", "submit", "--command", "x", "--gpus", "1.5"),
            "error: Invalid value for '--gpus': Input should be a valid integer, unable to parse "
            "string as an integer",
        ),
        (
            ("jobs", "submit", "--command", "x", "--cpus", "many"),
            "error: Invalid value for '--cpus': Input should be a valid number, unable to parse "
            "string as a number",
        ),
        (("jobs", "get"), "error: Missing argument 'job_id'."),
        (("jobs", "download", "j"), "error: Missing option '--out'."),
        (("jobs", "submit"), "error: give exactly one of CONFIG or --command"),
        (("tenants", "create", "x"), "error: Missing option '--quota-gpus'."),
    ],
)
def test_client_command_usage_errors_are_typers_words_in_one_line(monkeypatch, capsys, argv, says):
    code, out, err = cli(monkeypatch, capsys, *argv)
    one_line_exit_2(code, out, err)
    assert err == says + "\n"


@pytest.mark.parametrize("group", sorted(CLIENT))
def test_a_client_group_without_a_command_prints_its_help_and_exits_2(monkeypatch, capsys, group):
    code, out, _ = cli(monkeypatch, capsys, group)
    assert code == 2 and out.startswith(f"usage: rlguard {group} COMMAND")
    assert cli(monkeypatch, capsys, group, "--help")[:2] == (0, out)


def test_a_client_command_help_lists_its_options_and_defaults(monkeypatch, capsys):
    code, out, _ = cli(monkeypatch, capsys, "jobs", "list", "--limit", "x", "--help")
    assert code == 0 and out.startswith("usage: rlguard jobs list [OPTIONS]")
    assert "Your jobs, newest first." in out and "[default: 20; 1<=x<=1000]" in out
    code, out, _ = cli(monkeypatch, capsys, "tenants", "create", "--help")
    assert code == 0 and "--admin, --no-admin" in out and "--quota-gpus INTEGER" in out


def test_the_typer_app_hands_a_client_command_its_arguments(monkeypatch, capsys):
    """`app([...])` (not `main`) reaching `jobs`: the argparse group runs it all the same."""
    with pytest.raises(SystemExit) as info:
        app(["jobs", "list", "--limit", "0"], standalone_mode=False)
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith("error: Invalid value for '--limit'")
