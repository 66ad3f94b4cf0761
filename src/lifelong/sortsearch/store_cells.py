"""Cell access on a benchmark store's bit-packed, chunked matrix arrays (layout in `store.py`): id validation, reads
and popcounts of packed rows chunk by chunk with the bits beyond n cleared, and bit-level cell writes where facts win
over predictions. Pure functions over open zarr arrays; locking and the registry stay with `BenchStore`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from lifelong.sortsearch.bitmatrix import packed_width

if TYPE_CHECKING:
    import zarr

POPCOUNT = np.array([bin(value).count("1") for value in range(256)], dtype=np.uint8)


def tail_mask(n: int) -> int:
    """Mask of the valid bits in the last packed byte of an n-sample row."""
    return (0xFF << (8 - n % 8)) & 0xFF if n % 8 else 0xFF


def spans(start: int, stop: int, step: int) -> Iterator[tuple[int, int]]:
    """Chunk-aligned [a, b) pieces covering [start, stop)."""
    while start < stop:
        end = min(stop, (start // step + 1) * step)
        yield start, end
        start = end


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


def blocks(model_ids: np.ndarray, width: int, chunks: tuple[int, int]) -> Iterator[tuple[np.ndarray, int, int]]:
    """(positions into model_ids, b0, b1) per row chunk x byte-column chunk, so each read touches one chunk."""
    chunk_rows, chunk_bytes = chunks
    order = np.argsort(model_ids, kind="stable")
    chunk_of = model_ids[order] // chunk_rows
    for group in np.split(order, np.flatnonzero(np.diff(chunk_of)) + 1):
        if group.size:
            for b0, b1 in spans(0, width, chunk_bytes):
                yield group, b0, b1


def read_packed(array: zarr.Array, model_ids: np.ndarray, n: int, chunks: tuple[int, int]) -> np.ndarray:
    """Packed rows [k, ceil(n/8)] of `array` for model_ids, bits beyond n cleared."""
    width = packed_width(n)
    out = np.zeros((model_ids.size, width), dtype=np.uint8)
    for group, b0, b1 in blocks(model_ids, width, chunks):
        out[group, b0:b1] = array.oindex[model_ids[group], b0:b1]
    if width:
        out[:, -1] &= tail_mask(n)
    return out


def packed_rows(rows: np.ndarray, k: int, n: int, what: str) -> np.ndarray:
    """Validate packed rows as uint8 [k, ceil(n/8)] and return a copy with the bits beyond n cleared."""
    rows = np.asarray(rows)
    if rows.dtype != np.uint8 or rows.shape != (k, packed_width(n)):
        raise ValueError(
            f"{what} must be uint8 of shape ({k}, {packed_width(n)}) = np.packbits(rows, axis=1) for {k} rows "
            f"over n = {n} samples, got {rows.dtype} with shape {rows.shape}"
        )
    rows = rows.copy()
    if n:
        rows[:, -1] &= tail_mask(n)
    return rows


def row_counts(
    arrays: tuple[zarr.Array, zarr.Array], model_ids: np.ndarray, n: int, chunks: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Per model: number of set bits in each of the (correct, observed) arrays, streamed one chunk at a time."""
    ones, seen = np.zeros(model_ids.size, np.int64), np.zeros(model_ids.size, np.int64)
    width = packed_width(n)
    for group, b0, b1 in blocks(model_ids, width, chunks):
        for array, total in zip(arrays, (ones, seen), strict=True):
            block = array.oindex[model_ids[group], b0:b1]
            if b1 == width:
                block[:, -1] &= tail_mask(n)
            total[group] += POPCOUNT[block].sum(axis=1, dtype=np.int64)
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
    """Set cells rows x cols of the correct array to boolean `values` [rows, cols], one chunk at a time; as facts
    (observed) also set their observed bits, as predictions leave every observed cell unchanged."""
    correct, observed_array = arrays
    byte_of, bit_of = cols >> 3, (0x80 >> (cols & 7)).astype(np.uint8)
    for group, b0, b1 in blocks(rows, packed_width(n), chunks):
        in_span = np.flatnonzero((byte_of >= b0) & (byte_of < b1))
        if not in_span.size:
            continue
        r0, r1 = int(rows[group].min()), int(rows[group].max()) + 1
        c0, c1 = int(byte_of[in_span].min()), int(byte_of[in_span].max()) + 1
        cells = np.ix_(rows[group] - r0, byte_of[in_span] - c0)
        bits = np.broadcast_to(bit_of[in_span], (group.size, in_span.size))
        wanted = values[np.ix_(group, in_span)]
        block, seen = correct[r0:r1, c0:c1], observed_array[r0:r1, c0:c1]
        writable = np.ones_like(wanted) if observed else (seen[cells] & bits) == 0
        rr, cc = (np.broadcast_to(index, bits.shape) for index in cells)
        ones, zeros = writable & wanted, writable & ~wanted
        np.bitwise_or.at(block, (rr[ones], cc[ones]), bits[ones])
        np.bitwise_and.at(block, (rr[zeros], cc[zeros]), ~bits[zeros])
        correct[r0:r1, c0:c1] = block
        if observed:
            np.bitwise_or.at(seen, (rr, cc), bits)
            observed_array[r0:r1, c0:c1] = seen
