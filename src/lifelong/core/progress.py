"""The one progress bar of long work (runs, zoos, transfer matrices, pretraining): rich, or nothing when disabled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol


class ProgressUpdate(Protocol):
    """Move the bar: `advance` steps, and optionally a new description, position or total."""

    def __call__(
        self,
        advance: float = 0,
        description: str | None = None,
        *,
        completed: float | None = None,
        total: float | None = None,
    ) -> None: ...


def _ignore(advance: float = 0, description: str | None = None, *, completed=None, total=None) -> None:
    return None


@contextlib.contextmanager
def progress_bar(
    enabled: bool, total: float | None, *, done: float = 0, description: str = "", width: int = 40
) -> Iterator[ProgressUpdate]:
    """A bar `description | bar | done/total | elapsed`; yields the function that moves it (a no-op if disabled)."""
    if not enabled:
        yield _ignore
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn(f"[bold]{{task.description:<{width}}}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn()) as bar:
        task_id = bar.add_task(description, total=total, completed=done)

        def update(
            advance: float = 0,
            description: str | None = None,
            *,
            completed: float | None = None,
            total: float | None = None,
        ) -> None:
            bar.update(task_id, advance=advance or None, description=description, completed=completed, total=total)

        yield update
