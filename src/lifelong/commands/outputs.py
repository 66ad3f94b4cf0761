"""`--out`, `--resume` and `--overwrite` with one meaning on every command that keeps state (as `lifelong run`).

An output (a file or a folder) has its work folder beside it, `<OUT>.work`, holding what an interrupted command
finished; the work folder is removed when the output is written. Without either flag an existing output (or
work folder) is an error naming both flags: nothing is ever overwritten silently.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lifelong.core.errors import Interrupted, ResumeRefused, UsageError

SETTINGS_FILE = "settings.json"


class OutputExistsError(ResumeRefused):
    """The output (or its work folder) exists and neither --resume nor --overwrite was given."""


def work_folder(out: str | Path) -> Path:
    """The work folder of `out`: `<OUT>.work` beside it."""
    out = Path(out)
    return out.with_name(out.name + ".work")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def prepare_output(out: str | Path, *, resume: bool, overwrite: bool, what: str = "output") -> str:
    """Apply --resume / --overwrite to `out` and its work folder before any work starts.

    Returns "new" (nothing there: start), "continue" (--resume with a work folder: continue it) or "done"
    (--resume and the output is complete: nothing to do). --overwrite deletes the output and the work folder.
    """
    if resume and overwrite:
        raise UsageError("--resume and --overwrite exclude each other: give one of them")
    out = Path(out)
    work = work_folder(out)
    if overwrite:
        _remove(out)
        _remove(work)
        return "new"
    if work.exists():
        if resume:
            return "continue"
        raise OutputExistsError(
            f"{work} holds an interrupted {what}; pass --resume to continue it, --overwrite to start over, or "
            "--out to write elsewhere"
        )
    if out.exists():
        if resume:
            return "done"
        raise OutputExistsError(
            f"{out} already exists; pass --resume to keep it (and continue it if it was interrupted), --overwrite "
            "to start over, or --out to write elsewhere"
        )
    return "new"


def finish_output(out: str | Path) -> None:
    """Remove the work folder of `out` once `out` is written."""
    _remove(work_folder(out))


@contextmanager
def dropping_empty_work(out: str | Path) -> Iterator[None]:
    """Remove `out`'s work folder when the work inside fails (or is interrupted) before it finished anything.

    A refused or failed command then leaves nothing a rerun would have to --resume or --overwrite.
    """
    try:
        yield
    except BaseException:
        work = work_folder(out)
        if work.is_dir() and not any(p.is_file() and p.name != SETTINGS_FILE for p in work.rglob("*")):
            shutil.rmtree(work, ignore_errors=True)
        raise


def interrupted(out: str | Path, finished: str) -> Interrupted:
    """The Interrupted to raise when resumable work on `out` stops: it says that `finished` items (e.g. "Finished
    epochs") are kept and how to continue, when OUT's work folder holds any."""
    kept = f"{finished} are kept: add --resume to continue." if work_folder(out).exists() else ""
    return Interrupted(kept)
