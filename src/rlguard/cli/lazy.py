"""Subcommands imported only when they run: `rlguard jobs --help` must not import the simulator,
torch or Ray. A group lists each lazy subcommand by name with the line `--help` shows for it (a
test checks that line against the command's own help), and imports its module when it resolves
the subcommand to run it (or to show that subcommand's own help). A client command (a bare module
target, cli/argparsing.py) is listed too; `rlguard.cli.main` runs it before typer is imported,
and a typer app that reaches one anyway hands it its arguments as they are."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

# name -> ("module:attribute", the help line): the attribute is a command function or a Typer
# app; or name -> ("module", the help line): a client command, the module's argparse `group`
Lazy = Mapping[str, tuple[str, str]]


def load(name: str, target: str) -> Any:
    """The click command `target` names: a Typer app's group, a function as a command, or a
    client command's forwarder."""
    if ":" not in target:
        return Forward(name, target)
    module, _, attribute = target.partition(":")
    obj = getattr(import_module(module), attribute)
    if isinstance(obj, typer.Typer):
        group = typer.main.get_group(obj)
        group.name = name
        return group
    holder = typer.Typer()
    holder.command(name)(obj)
    return typer.main.get_group(holder).commands[name]


class Forward(TyperCommand):
    """A client command in the typer app: its arguments, `--help` included, go to its argparse
    group (cli/argparsing.py) untouched, and its exit code is the command's."""

    def __init__(self, name: str, module: str) -> None:
        self.group = import_module(module).group
        super().__init__(
            name,
            help=self.group.description,
            add_help_option=False,
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        )

    def invoke(self, ctx: Any) -> Any:
        from rlguard.cli.argparsing import run

        code = run(self.group, list(ctx.args))
        if code:
            raise SystemExit(code)


class Unloaded(TyperCommand):
    """A subcommand not imported yet: enough of it to be listed in its group's help."""

    def __init__(self, name: str, target: str, help_line: str) -> None:
        super().__init__(name, short_help=help_line)
        self.target = target


class LazyGroup(TyperGroup):
    """A Typer group that also holds the subcommands of `lazy` (after its own), unloaded."""

    lazy: ClassVar[Lazy] = {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, (target, help_line) in self.lazy.items():
            self.commands.setdefault(name, Unloaded(name, target, help_line))

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, Unloaded):
            command = self.commands[command.name] = load(command.name, command.target)
        return name, command, rest


def lazy_group(lazy: Lazy) -> type[LazyGroup]:
    """A `LazyGroup` class (Typer's `cls=`) holding `lazy`."""
    return type("LazyGroup", (LazyGroup,), {"lazy": dict(lazy)})
