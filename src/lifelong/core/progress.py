"""The one progress hook of long work (runs, zoos, features, fetches, pretraining): a rich bar, a callback, or nothing.

Every API function that does long work takes `progress`: False (nothing), True (a rich bar on the terminal, as the
command line shows) or a callback `progress(description, done, total)` called as the work advances (`total` None
when unknown), e.g. to drive a notebook's bar or a log.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Protocol, TypeAlias

ProgressCallback: TypeAlias = Callable[[str, float, "float | None"], None]
Progress: TypeAlias = "bool | ProgressCallback | None"


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
    enabled: Progress, total: float | None, *, done: float = 0, description: str = "", width: int = 40
) -> Iterator[ProgressUpdate]:
    """A bar `description | bar | done/total | elapsed`; yields the function that moves it.

    `enabled` is the API's `progress`: falsy for a no-op, a callable to receive `(description, done, total)` on every
    move instead of a bar, else a rich bar."""
    if not enabled:
        yield _ignore
        return
    if callable(enabled):
        yield _callback_update(enabled, total, done, description)
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


def _callback_update(callback: ProgressCallback, total: float | None, done: float, description: str) -> ProgressUpdate:
    """A ProgressUpdate that keeps the state of the work and hands it to `callback` on every move."""
    state = {"description": description, "done": float(done), "total": total}
    callback(description, float(done), total)

    def update(
        advance: float = 0,
        description: str | None = None,
        *,
        completed: float | None = None,
        total: float | None = None,
    ) -> None:
        if description is not None:
            state["description"] = description
        if total is not None:
            state["total"] = total
        state["done"] = float(completed) if completed is not None else state["done"] + advance
        callback(state["description"], state["done"], state["total"])

    return update
