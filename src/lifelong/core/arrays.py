"""Scanning large (possibly memory-mapped) arrays block by block without keeping them resident."""

from __future__ import annotations

import mmap

import numpy as np

SCAN_ROWS = 16_384  # rows read per block (32 MiB of 1,024-d float16)


def mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The `mmap` under a memmap (or a view of one), found through `.base`; None for in-memory arrays."""
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    return base


def release_pages(array: np.ndarray) -> None:
    """Drop this process's resident pages of a memory-mapped array (the page cache keeps them); else a no-op."""
    mapping = mapping_of(array)
    if mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
        mapping.madvise(mmap.MADV_DONTNEED)


def first_non_finite_row(rows: np.ndarray) -> int | None:
    """Index of the first row of a 2-D array holding a NaN or an infinity (None if all finite), read block by
    block so that a memory-mapped matrix bigger than memory is scanned with O(block) resident memory."""
    for start in range(0, rows.shape[0], SCAN_ROWS):
        finite = np.isfinite(np.asarray(rows[start : start + SCAN_ROWS])).all(axis=1)
        release_pages(rows)
        if not finite.all():
            return start + int(np.argmin(finite))
    return None
