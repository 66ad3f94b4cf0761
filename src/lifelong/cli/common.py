"""What every `lifelong` subcommand shares: KEY=VALUE options, the data-root help, and the one handler of errors and
interrupts that turns the toolkit's exceptions into `error: ...` (exit 2) and `Interrupted. ...` (exit 130)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape

from lifelong.commands.terminal import console, error_console
from lifelong.core.errors import Interrupted, LifelongError, UsageError

DATA_ROOT_HELP = "Datasets folder (default: $LIFELONG_DATA, else ~/.lifelong/data)."

# What a command's work may raise that the user can act on: the toolkit's own errors, and the builtin families the
# layers below raise for bad input (a ValueError naming the item, a missing file, a missing optional package).
USER_ERRORS = (LifelongError, ValueError, OSError, ImportError)


def parse_options(pairs: list[str]) -> dict:
    """KEY=VALUE pairs into a dict, values parsed as JSON when they are JSON (numbers, lists, booleans)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"option {pair!r} must look like KEY=VALUE, e.g. -o epochs=2 or -s split_seed=1")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def handled(invoke: Callable[[], Any]) -> Any:
    """Run a command's work: an error the user can act on prints `error: <message>` on stderr and exits 2; Ctrl-C
    (or SIGTERM where the command turns it into one) prints `Interrupted.` and what is kept, and exits 130.

    The one place the `lifelong` command handles both; every command goes through it (help_format.ReadableCommand).
    """
    try:
        return invoke()
    except Interrupted as stop:
        console.print(f"[yellow]Interrupted.[/] {escape(stop.kept)}".rstrip())
        raise typer.Exit(130) from None
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/]")
        raise typer.Exit(130) from None
    except USER_ERRORS as exc:
        error_console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
