"""What every `lifelong` subcommand shares: KEY=VALUE options, the data-root help, the interrupt message."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from lifelong.commands.terminal import console, fail

DATA_ROOT_HELP = "Datasets folder (default: $LIFELONG_DATA, else ~/.lifelong/data)."


def parse_options(pairs: list[str]) -> dict:
    """KEY=VALUE pairs into a dict, values parsed as JSON when they are JSON (numbers, lists, booleans)."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(f"option {pair!r} must look like KEY=VALUE, e.g. -o epochs=2 or -s split_seed=1")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def interrupted(out: Path, finished: str) -> typer.Exit:
    """Say a resumable command was interrupted (and, if OUT's work folder exists, that `finished` items are kept)."""
    from lifelong.commands.outputs import work_folder

    kept = f"{finished} are kept: add [bold]--resume[/] to continue." if work_folder(out).exists() else ""
    console.print(f"[yellow]Interrupted.[/] {kept}".rstrip())
    return typer.Exit(130)
