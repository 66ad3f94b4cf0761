"""What every `lifelong` command prints through: the output console, the error console, and error exits."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

console = Console()
error_console = Console(stderr=True, soft_wrap=True)


def note(text: str) -> None:
    """A yellow note on stderr (as plain text): something the user should know that is not an error."""
    error_console.print(f"[yellow]note:[/] {escape(text)}")


def fail(exc: BaseException | str) -> typer.Exit:
    """Print an error (as plain text: paths may contain [brackets]) on stderr; the exit to raise is code 2."""
    error_console.print(f"[red]error:[/] {escape(str(exc))}")
    return typer.Exit(2)
