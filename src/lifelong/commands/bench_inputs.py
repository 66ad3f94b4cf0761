"""What the `lifelong bench` commands share: the store opened (or a one-line error), results and CSV files read with
errors that name the file, line and column, and the --resume / --overwrite checks."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import typer

from lifelong.commands.terminal import fail


def _fail(exc: BaseException | str) -> typer.Exit:
    """`fail` with the message of a KeyError as written (str() of a KeyError adds quotes)."""
    if isinstance(exc, KeyError) and exc.args:
        return fail(str(exc.args[0]))
    return fail(exc)


def _some(values: list[int]) -> str:
    """Up to five values as "1, 2, 3", or "none"."""
    return ", ".join(str(v) for v in values[:5]) + (", ..." if len(values) > 5 else "") if values else "none"


def _open(store: Path):
    """The store at `store`, or a one-line error (exit 2) when there is none or it cannot be read."""
    from lifelong.sortsearch.store import BenchStore

    if not store.exists():
        raise fail(f"no benchmark store at {store}; create one with `lifelong bench create {store}`")
    try:
        return BenchStore.open(store)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        raise fail(f"{store} is not a readable benchmark store: {exc}") from None


def _csv_rows(path: Path, columns: tuple[str, ...], what: str) -> list[dict[str, str]]:
    """The rows of a CSV file that must have `columns`, or a ValueError naming the file and what it lacks."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc}); {what}") from None
    missing = [c for c in columns if c not in header]
    if missing or not rows:
        lacks = f"lacks the column(s) {', '.join(missing)}" if missing else "has no data rows"
        raise ValueError(f"{path} {lacks}: {what}")
    return rows


def _int_cell(path: Path, line: int, column: str, text: str | None, allowed: tuple[int, ...] | None = None) -> int:
    """An integer cell of a CSV file, or a ValueError naming the file, the line and the column."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = None
    if value is None or (allowed is not None and value not in allowed):
        expected = f"one of {list(allowed)}" if allowed is not None else "an integer"
        raise ValueError(f"{path}, line {line}: {column} is {text!r}; expected {expected}") from None
    return value


def _read_results(path: Path) -> tuple[np.ndarray | None, np.ndarray]:
    """(sample ids or None, 0/1 outcomes) from a 1-D .npy of outcomes or a CSV with columns sample_id, correct."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such results file")
    if path.suffix == ".npy":
        from lifelong.sortsearch.experiment import open_zero_one

        needs = (
            "--results needs ONE model's outcomes: a 1-D array of 0/1 (the full row, or the planned samples' "
            "outcomes with --budget)"
        )
        return None, open_zero_one(path, ndim=1, what="one model's outcomes, a 1-D array of 0/1", needs=needs)
    what = "a results CSV needs columns sample_id, correct (0 or 1), one row per evaluated sample"
    rows = _csv_rows(path, ("sample_id", "correct"), what)
    ids = np.array([_int_cell(path, i + 2, "sample_id", r["sample_id"]) for i, r in enumerate(rows)], np.int64)
    outcomes = np.array([_int_cell(path, i + 2, "correct", r["correct"], (0, 1)) for i, r in enumerate(rows)])
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{path} lists sample_id {int(unique[counts > 1][0])} more than once: give each sample once")
    return ids, outcomes.astype(np.uint8)


def _held_store(path: Path) -> tuple[int, int] | None:
    """(models, samples) of the store at `path` when it holds one with content; None when `path` is free: absent,
    an empty folder, or an empty store. Anything else there is an error (never replaced)."""
    from lifelong.sortsearch.registry import Registry
    from lifelong.sortsearch.store_files import REGISTRY_FILE

    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return None
    if not (path.is_dir() and (path / REGISTRY_FILE).is_file()):
        raise ValueError(f"{path} exists and is not a benchmark store: pick a new path")
    registry = Registry(path / REGISTRY_FILE)
    try:
        n, m = registry.counts()
        return None if n == 0 and m == 0 and not registry.sorts() else (m, n)
    finally:
        registry.close()


def _one_of(resume: bool, overwrite: bool) -> None:
    """Refuse --resume together with --overwrite."""
    if resume and overwrite:
        raise fail("give --resume or --overwrite, not both")
