"""Atomic creation of a benchmark store directory (guarantee 0 in `store.py`): a new store is built in a hidden temp
directory beside its path (`.NAME.<hex>.partial`) and renamed into place only when complete, so a killed build leaves
no store at the path, and an empty store there (or, when asked, any store) may be replaced."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lifelong.sortsearch.registry import Registry
from lifelong.sortsearch.store_files import LOCK_FILE, REGISTRY_FILE, SORTS_DIR, create_arrays, temp_name


def _initialise(staging: Path, chunk_models: int, chunk_samples: int) -> None:
    """An empty store at `staging`, made beside it and renamed in whole: a kill part-way never leaves a registry
    without its arrays where a later `--resume` would take it for a store to complete."""
    building = temp_name(staging.parent / f".{staging.name}-init")
    building.mkdir()
    try:
        Registry.create(building / REGISTRY_FILE, chunk_models=chunk_models, chunk_samples=chunk_samples).close()
        create_arrays(building, chunk_models, chunk_samples)
        (building / SORTS_DIR).mkdir()
        (building / LOCK_FILE).touch()
        building.rename(staging)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


@contextmanager
def staged_store(
    path: Path,
    *,
    replace_empty: bool,
    chunk_models: int,
    chunk_samples: int,
    replace: bool = False,
    work: Path | None = None,
    reuse_work: bool = False,
) -> Iterator[Path]:
    """A new empty store directory, yielded while hidden, that is renamed to `path` when the block ends normally.

    `path` must not exist, be an empty directory, or (with `replace_empty`) hold an empty store (no samples, no
    models), or (with `replace`) hold any store: that store is replaced, and deleted, only once the new one is
    complete. An error in the block deletes the temp directory. `work`: build in that folder instead of a hidden
    temp one; with `reuse_work` a store already there (left by an interrupted build) is yielded to be completed.
    An interrupted block (Ctrl-C, a kill) leaves `work` for that; an error deletes it unless it was reused.
    """
    if chunk_models < 1 or chunk_samples < 8 or chunk_samples % 8:
        raise ValueError(
            f"chunk_models={chunk_models}, chunk_samples={chunk_samples}: need chunk_models >= 1 and "
            "chunk_samples a positive multiple of 8 (columns are packed 8 samples per byte)"
        )
    replacing = check_target(path, replace_empty, replace)
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = work is None or not (reuse_work and (work / REGISTRY_FILE).is_file())
    staging = temp_name(path.parent / f".{path.name}") if work is None else work
    if fresh:
        if work is not None and work.exists():
            shutil.rmtree(work)
        _initialise(staging, chunk_models, chunk_samples)
    try:
        yield staging
        move_into_place(staging, path, replacing and (replace_empty or replace), replace)
    except Exception:
        if fresh:
            shutil.rmtree(staging, ignore_errors=True)
        raise
    except BaseException:
        if work is None:
            shutil.rmtree(staging, ignore_errors=True)
        raise


def move_into_place(staging: Path, path: Path, replace_empty: bool, replace: bool = False) -> None:
    """Rename a finished store directory to `path` (free, an empty directory, or a store to replace)."""
    try:
        if check_target(path, replace_empty, replace):  # a store to replace: move it aside first
            aside = temp_name(path.parent / f".{path.name}")
            os.rename(path, aside)
            os.rename(staging, path)  # a kill between the two renames leaves the old store aside, not deleted
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(staging, path)  # atomic; replaces an empty directory, refuses anything else
    except OSError as error:
        if isinstance(error, FileExistsError) and not error.filename:
            raise  # check_target's own message
        raise FileExistsError(f"{path} appeared while the store was being built ({error}): pick a new path") from None


def check_target(path: Path, replace_empty: bool, replace: bool = False) -> bool:
    """Whether `path` holds a store to replace (an empty one with `replace_empty`, any with `replace`); raise
    FileExistsError unless it is free (or an empty directory)."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return False
    if replace and path.is_dir() and (path / REGISTRY_FILE).is_file():
        return True
    if replace_empty and path.is_dir() and (path / REGISTRY_FILE).is_file():
        registry = Registry(path / REGISTRY_FILE)
        try:
            n, m = registry.counts()
            if n == 0 and m == 0 and not registry.sorts():
                return True
        finally:
            registry.close()
        raise FileExistsError(
            f"{path} already holds a store with {m} models x {n} samples: pick a new path, "
            "or replace it (`--overwrite`)"
        )
    if replace:
        raise FileExistsError(f"{path} exists and is not a benchmark store: not deleting it; pick a new path")
    raise FileExistsError(f"{path} already exists and is not an empty directory: pick a new path")
