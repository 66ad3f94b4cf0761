"""Atomic creation of a benchmark store directory (guarantee 0 in `store.py`): a new store is built in a hidden temp
directory beside its path (`.NAME.<hex>.partial`) and renamed into place only when complete, so a killed build leaves
no store at the path, and an empty store there may be replaced."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lifelong.sortsearch.registry import Registry
from lifelong.sortsearch.store_files import LOCK_FILE, REGISTRY_FILE, SORTS_DIR, create_arrays, temp_name


@contextmanager
def staged_store(path: Path, *, replace_empty: bool, chunk_models: int, chunk_samples: int) -> Iterator[Path]:
    """A new empty store directory, yielded while hidden, that is renamed to `path` when the block ends normally.

    `path` must not exist, be an empty directory, or (with `replace_empty`) hold an empty store (no samples, no
    models), which is replaced. An error in the block deletes the temp directory.
    """
    if chunk_models < 1 or chunk_samples < 8 or chunk_samples % 8:
        raise ValueError(
            f"chunk_models={chunk_models}, chunk_samples={chunk_samples}: need chunk_models >= 1 and "
            "chunk_samples a positive multiple of 8 (columns are packed 8 samples per byte)"
        )
    replacing = check_target(path, replace_empty)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = temp_name(path.parent / f".{path.name}")
    staging.mkdir()
    try:
        Registry.create(staging / REGISTRY_FILE, chunk_models=chunk_models, chunk_samples=chunk_samples).close()
        create_arrays(staging, chunk_models, chunk_samples)
        (staging / SORTS_DIR).mkdir()
        (staging / LOCK_FILE).touch()
        yield staging
        move_into_place(staging, path, replacing and replace_empty)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def move_into_place(staging: Path, path: Path, replace_empty: bool) -> None:
    """Rename a finished store directory to `path` (free, an empty directory, or an empty store to replace)."""
    try:
        if check_target(path, replace_empty):  # an empty store: move it aside first
            aside = temp_name(path.parent / f".{path.name}")
            os.rename(path, aside)
            os.rename(staging, path)  # a kill between the two renames loses only that empty store
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.rename(staging, path)  # atomic; replaces an empty directory, refuses anything else
    except OSError as error:
        if isinstance(error, FileExistsError) and not error.filename:
            raise  # check_target's own message
        raise FileExistsError(f"{path} appeared while the store was being built ({error}): pick a new path") from None


def check_target(path: Path, replace_empty: bool) -> bool:
    """Whether `path` holds an empty store to replace; raise FileExistsError unless it is free (or empty)."""
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        return False
    if replace_empty and path.is_dir() and (path / REGISTRY_FILE).is_file():
        registry = Registry(path / REGISTRY_FILE)
        try:
            n, m = registry.counts()
            if n == 0 and m == 0 and not registry.sorts():
                return True
        finally:
            registry.close()
        raise FileExistsError(
            f"{path} already holds a store with {n} samples and {m} models: pick a new path, "
            "or delete it first if you mean to replace it"
        )
    raise FileExistsError(f"{path} already exists and is not an empty directory: open it, or pick a new path")
