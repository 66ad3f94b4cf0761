"""Help pages like a usual CLI's (git, pip): `--out OUT`, bare flags, whole words at any terminal width.

Typer's own pages show type placeholders (`<bool>`, `<list[Path]>`, `<int range>`), `{RUN_DIRS}` in usage
lines, and its rich panels fold metavars and cut long help words with `…` at 80 columns. Every `lifelong` group
and command is built from the classes here instead (see `readable_help`): plain click pages, two columns, words
wrapped whole, metavars from the parameter names, and command lists that are never truncated.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from typer import _click
from typer._click import _textwrap
from typer._click.exceptions import UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from lifelong.core.suggest import did_you_mean


class _WholeWordsWrapper(_textwrap.TextWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.break_on_hyphens = False
        self.break_long_words = False


@contextmanager
def _whole_words() -> Iterator[None]:
    """Wrap help text between words only: never inside `meta-test`, a path or a default."""
    saved = _textwrap.TextWrapper
    _textwrap.TextWrapper = _WholeWordsWrapper  # click's wrap_text imports it from there on each call
    try:
        yield
    finally:
        _textwrap.TextWrapper = saved


class WholeWordsFormatter(_click.HelpFormatter):
    """click's help formatter, wrapping whole words only (a word longer than the line gets a line of its own)."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        with _whole_words():
            super().write_usage(prog, args, prefix)

    def write_text(self, text: str) -> None:
        with _whole_words():
            super().write_text(text)

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        with _whole_words():
            super().write_dl(rows, col_max, col_spacing)


class ReadableContext(_click.Context):
    formatter_class = WholeWordsFormatter


def _no_type(ctx: Any) -> None:
    return None


def _plain(params: list) -> list:
    """Name parameters by their metavar (NAME, not <str>); flags and `--help` show none."""
    for param in params:
        if isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
            param.display_type_rich = _no_type  # the argument's name already says what it is
            param._usage_display_name = lambda param=param: param.metavar
        elif isinstance(param, TyperOption) or hasattr(param, "is_flag"):
            if getattr(param, "is_flag", False) or getattr(param, "count", False):
                param.display_type_rich = _no_type
            elif param.metavar is None:
                param.metavar = param.name.upper()
    return params


def _in_house_style(exc: Any) -> None:
    """Make a usage error print `error: ...` (the style of every other error) instead of click's `Error: ...`."""
    original = exc.show

    def show(file: Any = None) -> None:
        buffer = io.StringIO()
        original(file=buffer)
        text = buffer.getvalue()
        head, sep, tail = text.rpartition("Error: ")
        (file or sys.stderr).write(head + "error: " + tail if sep else text)

    exc.show = show


class _HouseStyleErrors:
    """Usage errors raised while parsing this command's arguments print `error: ...`."""

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[misc]
        except UsageError as exc:
            _in_house_style(exc)
            raise


def _summary(command: Any) -> str:
    """A command's first paragraph, whole (click's own short help stops at the first period, e.g. in `e.g.`)."""
    text = command.short_help or (command.help or "").split("\n\n")[0]
    return " ".join(text.split())


class ReadableCommand(_HouseStyleErrors, TyperCommand):
    """A command whose help names its parameters like a usual CLI (see the module docstring), and whose errors and
    interrupts go through the one handler (`lifelong.cli.common.handled`)."""

    context_class = ReadableContext

    def get_params(self, ctx: Any) -> list:
        return _plain(super().get_params(ctx))

    def invoke(self, ctx: Any) -> Any:
        from lifelong.cli.common import handled

        return handled(lambda: super(ReadableCommand, self).invoke(ctx))


class ReadableGroup(_HouseStyleErrors, TyperGroup):
    """A group whose help lists every command with its whole first paragraph, and suggests close command names."""

    context_class = ReadableContext

    def get_params(self, ctx: Any) -> list:
        return _plain(super().get_params(ctx))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, _summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            name = args[0] if args else ""
            if name and not name.startswith("-") and self.get_command(ctx, name) is None:
                ctx.fail(f"no command {name!r} in `{ctx.command_path}`{did_you_mean(name, self.list_commands(ctx))}")
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            _in_house_style(exc)
            raise


def readable_help(app: typer.Typer) -> None:
    """Build `app`, its commands and (recursively) its groups from the readable classes, as plain pages."""
    app.rich_markup_mode = None  # plain click pages: two columns that wrap whole words (no rich panels)
    _install(app)


def _install(group: typer.Typer) -> None:
    group.info.cls = ReadableGroup
    for command in group.registered_commands:
        command.cls = ReadableCommand
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            sub.cls = ReadableGroup
            _install(sub.typer_instance)
