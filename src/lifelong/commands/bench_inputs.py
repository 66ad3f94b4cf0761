"""What the `lifelong bench` workflows share: the store opened (or a one-line error), results and CSV files read with
errors that name the file, line and column, budgets parsed, the --resume / --overwrite checks, and the errors of the
layers below turned into the toolkit's own (`toolkit_errors`), with the messages the command line prints."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from lifelong.core.errors import DataError, LifelongError, UsageError


def toolkit_error(exc: BaseException | str) -> LifelongError:
    """The toolkit error for what the store's layers raised, with its message as written (str() of a KeyError adds
    quotes): a LifelongError as it is; a file missing, unreadable or of the wrong type (OSError, TypeError) a
    DataError; a bad value or an unknown name (ValueError, LookupError) a UsageError."""
    if isinstance(exc, LifelongError):
        return exc
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return DataError(text) if isinstance(exc, OSError | TypeError) else UsageError(text)


@contextmanager
def toolkit_errors() -> Iterator[None]:
    """Raise what the block raises (ValueError, LookupError, OSError, TypeError) as the toolkit's errors."""
    try:
        yield
    except LifelongError:
        raise
    except (ValueError, LookupError, OSError, TypeError) as exc:
        raise toolkit_error(exc) from exc


def _some(values: list[int]) -> str:
    """Up to five values as "1, 2, 3", or "none"."""
    return ", ".join(str(v) for v in values[:5]) + (", ..." if len(values) > 5 else "") if values else "none"


def _open(store: Path):  # noqa: ANN202 (a BenchStore: its module needs the [bench] extra, imported here)
    """The store at `store`, or a DataError when there is none or it cannot be read."""
    from lifelong.sortsearch.store import BenchStore

    if not store.exists():
        raise DataError(f"no benchmark store at {store}; create one with `lifelong bench create {store}`")
    try:
        return BenchStore.open(store)
    except (FileNotFoundError, NotADirectoryError, ValueError) as exc:
        raise DataError(f"{store} is not a readable benchmark store: {exc}") from exc


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
        raise UsageError("give --resume or --overwrite, not both")


def at_least(value: int | float | None, low: int | float, option: str) -> None:
    """Refuse a number below `low` given to `option` (the command line checks it as it reads the flag)."""
    if value is not None and value < low:
        raise UsageError(f"{option} {value} must be at least {low}")


def parse_budgets(budgets: str | Sequence[int]) -> list[int]:
    """Budgets from a comma-separated string ("8,32,300"), a geometric run ("8,16,...,16384": each term the previous
    times b/a up to z, exactly), or a sequence of ints."""
    if not isinstance(budgets, str):
        return list(budgets)
    words = [w.strip() for w in budgets.split(",") if w.strip()]
    form = "comma-separated integers like 8,32,300, or a geometric run like 8,16,...,16384"
    try:
        if "..." not in words:
            return [int(w) for w in words]
        dots = words.index("...")
        head, tail = [int(w) for w in words[:dots]], [int(w) for w in words[dots + 1 :]]
    except ValueError:
        raise UsageError(f"budgets must be {form}; got {budgets!r}") from None
    if words.count("...") != 1 or len(head) < 2 or len(tail) != 1 or head[0] < 1:
        raise UsageError(f"budgets must be {form} (two or more terms, '...', the last term); got {budgets!r}")
    ratio, rest = divmod(head[1], head[0])
    if rest or ratio < 2 or any(b != head[0] * ratio**i for i, b in enumerate(head)):
        raise UsageError(f"budgets {budgets!r}: the terms before '...' must grow by a whole factor, as 8,16,... does")
    out = list(head)
    while out[-1] < tail[0]:
        out.append(out[-1] * ratio)
    if out[-1] != tail[0]:
        raise UsageError(
            f"budgets {budgets!r}: a geometric run must end on one of its terms, and {tail[0]} is not reached from "
            f"{head[0]} by factors of {ratio}"
        )
    return out
