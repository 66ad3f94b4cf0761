"""What every `lifelong` command prints through: the output console, the error console, and notes.

Errors are not printed here: the work raises the toolkit's exceptions (`lifelong.core.errors`) and the command
line's one handler (`lifelong.cli.common.handled`) prints them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from lifelong.core.errors import LifelongError, UsageError

console = Console()
error_console = Console(stderr=True, soft_wrap=True)


def note(text: str) -> None:
    """A yellow note on stderr (as plain text): something the user should know that is not an error."""
    error_console.print(f"[yellow]note:[/] {escape(text)}")


def fail(exc: BaseException | str) -> LifelongError:
    """The toolkit error to raise for `exc` (a message, or an exception whose message the user can act on): the
    exception itself when it is one already, else a UsageError with its message. Printed by the CLI's handler."""
    if isinstance(exc, LifelongError):
        return exc
    return UsageError(str(exc))


def print_path(label: str, path: str | Path, indent: int = 2) -> None:
    """A label and a path (or any value), the value whole on a line of its own when both do not fit one line.

    Never folded by the console: a value wider than the terminal stays one line, to copy whole.
    """
    text = f"{label} {path}"
    if len(text) > console.width:
        console.print(label, soft_wrap=True, markup=False, highlight=False)
        text = " " * indent + str(path)
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`n word` with the word in the plural unless n is 1: `1 task`, `3 tasks`, `2 licences`."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def print_title(text: str) -> None:
    """A table's title on lines of its own above it, in italics, wrapped between words only: a run id in it stays
    whole however narrow the table (a rich Table's own title wraps to the table's width, inside ids)."""
    import textwrap

    lines = textwrap.wrap(text, max(console.width, 20), break_long_words=False, break_on_hyphens=False)
    for line in lines:
        console.print(f"[italic]{escape(line)}[/]", soft_wrap=True, highlight=False)


def matrix_table(corner: str, columns: list[str]) -> Any:
    """A rich Table for a matrix of numbers (accuracy matrices, fact R): a first column named `corner`, then one
    right-aligned column per label, one space between columns (the box's divider, no padding) and a rule under the
    header, so that 11 columns of `100.0` fit 80 columns without folding a number."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, padding=0, pad_edge=False)
    table.add_column(corner, no_wrap=True)
    for label in columns:
        table.add_column(label, justify="right", no_wrap=True)
    return table
