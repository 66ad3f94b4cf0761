"""The files of a benchmark store directory (layout and guarantees in `store.py`): their names, the zarr arrays,
the sort files, and the write lock every writer holds (an flock on store.lock plus the WRITING marker), with the
clean-up of what a killed writer left behind."""

from __future__ import annotations

import fcntl
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lifelong.sortsearch.registry import SortRecord

try:
    import zarr
except ImportError as exc:  # the store's matrix needs the optional [bench] dependency
    raise ImportError("the benchmark store needs zarr: pip install 'lifelong[bench]'") from exc

REGISTRY_FILE = "registry.sqlite"
LOCK_FILE = "store.lock"
WRITING_MARKER = "WRITING"
SORTS_DIR = "sorts"
ARRAYS = ("correct", "observed")
TEMP_SUFFIX = ".partial"  # zarr's LocalStore names its temporary files "<name>.<uuid>.partial"; so do we


def temp_name(path: Path) -> Path:
    """A unique temporary sibling of `path`, recognised as an orphan by recovery and check()."""
    return path.with_name(f"{path.name}.{uuid.uuid4().hex}{TEMP_SUFFIX}")


def create_arrays(folder: Path, chunk_models: int, chunk_samples: int) -> None:
    """The empty correct and observed arrays (uint8 [0, 0], chunks of models x packed bytes) in `folder`."""
    for name in ARRAYS:
        zarr.create_array(
            folder / f"{name}.zarr",
            shape=(0, 0),
            chunks=(chunk_models, chunk_samples // 8),
            dtype="uint8",
            fill_value=0,
        )


def open_arrays(path: Path) -> tuple[zarr.Array, zarr.Array]:
    """The correct and observed arrays of the store at `path`, opened fresh (another process may have resized them).

    They write every chunk they are given, all-zero ones included (zarr's `write_empty_chunks`): zarr's check
    for an all-fill chunk costs more than encoding the chunk (an all-zero chunk is a file of a few dozen bytes,
    read back as zeros as a missing one is)."""
    correct, observed = (_writing_empty(zarr.open_array(path / f"{name}.zarr", mode="r+")) for name in ARRAYS)
    return correct, observed


def _writing_empty(array: zarr.Array) -> zarr.Array:
    """`array` with write_empty_chunks set, where this zarr has `Array.with_config` (else as it is: slower)."""
    with_config = getattr(array, "with_config", None)
    return array if with_config is None else with_config({"write_empty_chunks": True})


def permutation_problem(order: np.ndarray, n: int) -> str | None:
    """Why `order` is not a permutation of range(n), or None if it is."""
    if order.ndim != 1 or not np.issubdtype(order.dtype, np.integer):
        return f"order must be a 1-D integer array, got {order.dtype} with shape {order.shape}"
    if order.size != n:
        return f"order has {order.size} entries but should cover all {n} samples"
    if n and (order.min() < 0 or order.max() >= n or np.bincount(order, minlength=n).max() != 1):
        return f"order is not a permutation of 0..{n - 1} (values repeat or fall outside)"
    return None


def write_sort_file(target: Path, order: np.ndarray, n: int) -> None:
    """Write a sample order as `target` (.npy, int32 while n fits) through a temp file and an atomic rename."""
    temp = temp_name(target)
    try:
        with temp.open("wb") as handle:
            np.save(handle, order.astype(np.int32 if n < 2**31 else np.int64))
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def sort_file_problems(path: Path, records: Iterable[SortRecord], n: int, m: int) -> list[str]:
    """What is wrong with the sort files of the store at `path` that `records` register (n samples, m models)."""
    problems = []
    for record in records:
        file = path / SORTS_DIR / record.file
        where = f"sort version {record.version} ({file.name})"
        if not file.is_file():
            problems.append(f"{where}: file missing; re-run the sort and save it again")
            continue
        try:
            problem = permutation_problem(np.load(file, allow_pickle=False), record.n_samples)
        except (OSError, ValueError) as error:
            problem = f"unreadable ({error})"
        if problem:
            problems.append(f"{where}: {problem}; re-run the sort and save it again")
        if record.n_samples > n or any(not 0 <= model < m for model in record.ranking_models):
            problems.append(f"{where}: covers more samples or models than the registry holds")
    return problems


def orphans(path: Path, registered: Iterable[str]) -> list[Path]:
    """Temp files anywhere in the store at `path`, and sort files that no registered sort names."""
    temps = [Path(root) / name for root, _, files in os.walk(path) for name in files]
    registered = set(registered)
    sorts_dir = path / SORTS_DIR
    candidates = sorts_dir.iterdir() if sorts_dir.is_dir() else ()
    sorts = [p for p in candidates if p.name not in registered and p.suffix == ".npy"]
    return [p for p in temps if p.name.endswith(TEMP_SUFFIX)] + sorts


@contextmanager
def write_lock(path: Path, lock_fd: int, timeout: float, registered: Callable[[], Iterable[str]]) -> Iterator[None]:
    """Hold the exclusive write lock of the store at `path` (an flock on `lock_fd`, waiting up to `timeout` s).

    A WRITING marker left by a writer that was killed holding the lock means its orphans (temp files, sort files
    not in `registered()`) are deleted first: the lock is held, so no live writer owns them.
    """
    deadline, delay = time.monotonic() + timeout, 0.001
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"another process has held the write lock {path / LOCK_FILE} for over "
                    f"{timeout} s: wait for it to finish, then try again"
                ) from None
            time.sleep(delay)
            delay = min(2 * delay, 0.05)
    marker = path / WRITING_MARKER
    try:
        if marker.exists():
            for orphan in orphans(path, registered()):
                orphan.unlink(missing_ok=True)
        marker.write_text(str(os.getpid()))
        try:
            yield
        except Exception:  # an ordinary error left no temp files behind (zarr and save_sort remove theirs)
            marker.unlink()
            raise
        marker.unlink()
    finally:
        fcntl.flock(lock_fd, fcntl.LOCK_UN)
