"""Cell access on a benchmark store's bit-packed, chunked matrix arrays (layout in `store.py`): id validation, reads
and popcounts of packed rows a few MB at a time with the bits beyond n cleared, and bit-level cell writes where facts
win over predictions. Pure functions over open zarr arrays; locking and the registry stay with `BenchStore`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lifelong.sortsearch.bitmatrix import packed_width

if TYPE_CHECKING:
    import zarr

POPCOUNT = np.array([bin(value).count("1") for value in range(256)], dtype=np.uint8)
READ_BYTES = 64 * 2**20  # packed bytes per zarr read or write: many chunks at once (zarr decodes them in parallel)


def tail_mask(n: int) -> int:
    """Mask of the valid bits in the last packed byte of an n-sample row."""
    return (0xFF << (8 - n % 8)) & 0xFF if n % 8 else 0xFF


def index_array(ids: Sequence[int] | np.ndarray, limit: int, what: str) -> np.ndarray:
    """Validate ids as unique integers in [0, limit) and return them as int64."""
    array = np.asarray(ids)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"{what} ids must be a 1-D sequence of integers, got {array.dtype} with shape {array.shape}")
    array = array.astype(np.int64)
    bad = array[(array < 0) | (array >= limit)]
    if bad.size:
        valid = f"ids 0..{limit - 1}" if limit else f"add {what}s first"
        raise IndexError(f"{what} id {int(bad[0])} is out of range: the store has {limit} {what}s ({valid})")
    if np.unique(array).size != array.size:
        raise ValueError(f"{what} ids contain duplicates: pass each id once")
    return array


def row_limit(width: int, chunk_rows: int) -> int:
    """Rows per zarr call: whole chunks of rows, about `READ_BYTES` of `width`-byte rows (at least one chunk)."""
    return max(1, READ_BYTES // max(1, width) // chunk_rows) * chunk_rows


def pieces(model_ids: np.ndarray, chunk_rows: int, limit: int) -> Iterator[tuple[np.ndarray, int, int, np.ndarray]]:
    """(positions into model_ids, r0, r1, rows - r0) per zarr call: the ids in rows [r0, r1) of at most `limit`
    rows, over adjacent chunks of rows only (a gap of whole chunks is never read), cut at chunk boundaries."""
    order = np.argsort(model_ids, kind="stable")
    ids = model_ids[order]
    chunk_of = ids // chunk_rows
    cuts = np.flatnonzero(np.diff(chunk_of) > 1) + 1
    for segment in np.split(np.arange(ids.size), cuts):
        if not segment.size:
            continue
        base = int(chunk_of[segment[0]]) * chunk_rows
        part = (ids[segment] - base) // limit
        for group in np.split(segment, np.flatnonzero(np.diff(part)) + 1):
            r0, r1 = int(ids[group[0]]), int(ids[group[-1]]) + 1
            yield order[group], r0, r1, ids[group] - r0


def read_packed(array: zarr.Array, model_ids: np.ndarray, n: int, chunks: tuple[int, int]) -> np.ndarray:
    """Packed rows [k, ceil(n/8)] of `array` for model_ids, bits beyond n cleared; one zarr call per run of rows."""
    width = packed_width(n)
    out = None
    for positions, r0, r1, rows in pieces(model_ids, chunks[0], row_limit(width, chunks[0])) if width else ():
        block = array[r0:r1, :width]
        if out is None and model_ids.size == r1 - r0 and np.all(np.diff(positions) > 0):
            out = block  # all the rows asked for, in order, from one read: no copy
            break
        if out is None:
            out = np.zeros((model_ids.size, width), dtype=np.uint8)
        out[positions] = block if rows.size == r1 - r0 else block[rows]
    if out is None:
        out = np.zeros((model_ids.size, width), dtype=np.uint8)
    if width:
        out[:, -1] &= tail_mask(n)
    return out


def packed_rows(rows: np.ndarray, k: int, n: int, what: str) -> np.ndarray:
    """Validate packed rows as uint8 [k, ceil(n/8)] and return them with the bits beyond n cleared (a copy if any
    was set: the caller's array is never changed)."""
    rows = np.asarray(rows)
    if rows.dtype != np.uint8 or rows.shape != (k, packed_width(n)):
        raise ValueError(
            f"{what} must be uint8 of shape ({k}, {packed_width(n)}) = np.packbits(rows, axis=1) for {k} rows "
            f"over n = {n} samples, got {rows.dtype} with shape {rows.shape}"
        )
    if n and np.any(rows[:, -1] & (~tail_mask(n) & 0xFF)):
        rows = rows.copy()
        rows[:, -1] &= tail_mask(n)
    return rows


def all_ones(k: int, n: int) -> np.ndarray:
    """k packed rows [k, ceil(n/8)] with all n bits set (the bits beyond n clear)."""
    rows = np.full((k, packed_width(n)), 0xFF, np.uint8)
    if n:
        rows[:, -1] = tail_mask(n)
    return rows


def bit_counts(block: np.ndarray, n_bits: int | None = None) -> np.ndarray:
    """Set bits (int64) per row of packed rows uint8 [rows, bytes], of the first `n_bits` of each (default all)."""
    if n_bits is not None:
        block = block[:, : packed_width(n_bits)]
    rows, width = block.shape
    if not width:
        return np.zeros(rows, np.int64)
    counts = np.zeros(rows, np.int64)
    if n_bits is not None and n_bits % 8:  # the last byte holds bits beyond n_bits
        counts += _popcount(block[:, -1:] & tail_mask(n_bits))
        block = block[:, :-1]
    return counts + _popcount(block)


def _popcount(block: np.ndarray) -> np.ndarray:
    """Set bits per row of a uint8 [rows, bytes] block: np.bitwise_count on 8-byte words (numpy >= 2.0), or a
    256-entry lookup table."""
    if not hasattr(np, "bitwise_count"):
        return POPCOUNT[block].sum(axis=1, dtype=np.int64)
    if block.strides[-1] != 1:
        block = np.ascontiguousarray(block)
    whole = block.shape[1] // 8 * 8
    counts = np.bitwise_count(block[:, whole:]).sum(axis=1, dtype=np.int64)
    if whole:  # an unaligned uint64 view of each row's whole words: no copy
        counts += np.bitwise_count(block[:, :whole].view(np.uint64)).sum(axis=1, dtype=np.int64)
    return counts


def array_counts(array: zarr.Array, model_ids: np.ndarray, n: int, chunks: tuple[int, int]) -> np.ndarray:
    """Per model: the number of set bits of its row in `array` (bits beyond n ignored), a few MB per read."""
    totals = np.zeros(model_ids.size, np.int64)
    width = packed_width(n)
    if width:
        for positions, r0, r1, rows in pieces(model_ids, chunks[0], row_limit(width, chunks[0])):
            block = array[r0:r1, :width]
            totals[positions] = bit_counts(block if rows.size == r1 - r0 else block[rows], n)
    return totals


def row_counts(
    arrays: tuple[zarr.Array, zarr.Array], model_ids: np.ndarray, n: int, chunks: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Per model: number of set bits in each of the (correct, observed) arrays, streamed a few MB at a time."""
    ones, seen = (array_counts(array, model_ids, n, chunks) for array in arrays)
    return ones, seen


def write_cells(
    arrays: tuple[zarr.Array, zarr.Array],
    rows: np.ndarray,
    cols: np.ndarray,
    values: np.ndarray,
    *,
    n: int,
    chunks: tuple[int, int],
    observed: bool,
) -> None:
    """Set cells rows x cols of the correct array to boolean `values` [rows, cols], a few MB at a time; as facts
    (observed) also set their observed bits, as predictions leave every observed cell unchanged.

    Each block read and written back spans whole chunks of bytes (the chunks holding the cells; adjacent ones
    together), so zarr never merges a partial chunk, and decodes and encodes a block's chunks in parallel."""
    correct, observed_array = arrays
    width = packed_width(n)
    if not (rows.size and cols.size and width):
        return
    byte_of, bit_of = cols >> 3, (0x80 >> (cols & 7)).astype(np.uint8)
    step = chunks[1]
    touched = np.unique(byte_of // step)
    for run in np.split(touched, np.flatnonzero(np.diff(touched) > 1) + 1):
        c0, c1 = int(run[0]) * step, min(width, (int(run[-1]) + 1) * step)
        in_span = np.flatnonzero((byte_of >= c0) & (byte_of < c1))
        for group, r0, r1, local in pieces(rows, chunks[0], row_limit(c1 - c0, chunks[0])):
            shape = (group.size, in_span.size)
            rr, cc = np.broadcast_to(local[:, None], shape), np.broadcast_to(byte_of[in_span] - c0, shape)
            bits = np.broadcast_to(bit_of[in_span], shape)
            wanted = values[np.ix_(group, in_span)]
            block, seen = correct[r0:r1, c0:c1], observed_array[r0:r1, c0:c1]
            writable = np.ones_like(wanted) if observed else (seen[rr, cc] & bits) == 0
            ones, zeros = writable & wanted, writable & ~wanted
            np.bitwise_or.at(block, (rr[ones], cc[ones]), bits[ones])
            np.bitwise_and.at(block, (rr[zeros], cc[zeros]), ~bits[zeros])
            correct[r0:r1, c0:c1] = block
            if observed:
                np.bitwise_or.at(seen, (rr, cc), bits)
                observed_array[r0:r1, c0:c1] = seen
