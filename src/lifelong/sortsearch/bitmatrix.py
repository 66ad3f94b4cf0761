"""Read-only row views over 0/1 matrices (rows = models, columns = samples) that work in row chunks.

`PackedRows` wraps a bit-packed array (`np.packbits(dense, axis=1)`, big bit order, shape [m, ceil(n/8)]) held
in memory, memory-mapped, or behind any object with numpy-style row slicing (a zarr array, `NpyRows`); `DenseRows`
wraps a dense uint8/bool [m, n] array-like. Both expose the same operations, and nothing here unpacks more than
one chunk of rows at a time, so a 31,250 x 1,697,682 matrix is processed in bounded memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

CHUNK_BYTES = 16 * 2**20  # unpacked (dense uint8) bytes per streamed row chunk
_PACKED_CHUNK_BYTES = 2**20  # packed bytes per chunk of the bit-sliced column counter (fits in L2 with its tree)
_WORD = np.dtype(np.uint64)


def packed_width(n: int) -> int:
    """Bytes per packed row of n columns."""
    return (int(n) + 7) // 8


def _check_01(dense: np.ndarray, what: str = "matrix") -> None:
    """Raise unless an integer or bool array holds only 0 and 1."""
    if dense.dtype == np.bool_:
        return
    if not np.issubdtype(dense.dtype, np.integer):
        raise TypeError(f"{what} has dtype {dense.dtype}; expected a 0/1 integer (uint8) or bool array")
    if dense.size and (dense.min() < 0 or dense.max() > 1):
        bad = np.argwhere((dense < 0) | (dense > 1))[0]
        raise ValueError(f"{what} holds {dense[tuple(bad)]} at {tuple(int(i) for i in bad)}; only 0 and 1 are allowed")


def pack(dense: np.ndarray) -> np.ndarray:
    """Bit-pack a dense 0/1 [m, n] array along its rows (big bit order, zero padding)."""
    dense = np.asarray(dense)
    if dense.ndim != 2:
        raise ValueError(f"pack expects a 2-D [rows, columns] array; got shape {dense.shape}")
    _check_01(dense, "dense matrix")
    return np.packbits(dense, axis=1)


def unpack(packed: np.ndarray, n: int) -> np.ndarray:
    """Unpack [m, ceil(n/8)] packed rows into a dense uint8 [m, n] array."""
    packed = np.asarray(packed)
    if packed.ndim != 2 or packed.shape[1] != packed_width(n):
        raise ValueError(f"packed rows of {n} columns need shape [m, {packed_width(n)}]; got {packed.shape}")
    return np.unpackbits(packed, axis=1, count=int(n))


def popcount_rows(packed: np.ndarray, n: int) -> np.ndarray:
    """Number of ones in each packed row of n columns (padding bits beyond n are ignored)."""
    packed = np.asarray(packed)
    full = int(n) // 8  # whole bytes
    whole = full // 8 * 8  # bytes counted as 64-bit words
    ones = np.zeros(packed.shape[0], np.int64)
    if whole:
        body = packed[:, :whole]
        try:
            words = body.view(np.uint64)
        except ValueError:  # last axis not contiguous
            words = np.ascontiguousarray(body).view(np.uint64)
        ones += np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    if full > whole:
        ones += np.bitwise_count(packed[:, whole:full]).sum(axis=1, dtype=np.int64)
    if n % 8:
        ones += np.bitwise_count(packed[:, full] & np.uint8((0xFF << (8 - n % 8)) & 0xFF))
    return ones


def _runs(indices: np.ndarray) -> list[tuple[int, int]]:
    """Split row indices into maximal runs of consecutive ascending values, as (start, stop) pairs."""
    if indices.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [indices.size]))
    return [(int(indices[a]), int(indices[b - 1]) + 1) for a, b in zip(starts, stops, strict=True)]


def _check_indices(indices: Any, limit: int, what: str) -> np.ndarray:
    """Validate `what` (row or column) indices as a 1-D int64 array of values in [0, limit)."""
    idx = np.asarray(indices)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise TypeError(f"{what} indices must be a 1-D integer array; got dtype {idx.dtype}, shape {idx.shape}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= limit):
        raise IndexError(f"{what} indices must lie in [0, {limit}); got min {idx.min()}, max {idx.max()}")
    return idx


class RowSource:
    """Shared chunked operations of a read-only 0/1 row matrix; subclasses provide `_read` and `_read_packed`."""

    shape: tuple[int, int]

    def _read(self, i0: int, i1: int) -> np.ndarray:
        """Dense uint8 rows i0..i1."""
        raise NotImplementedError

    def _read_packed(self, i0: int, i1: int) -> np.ndarray:
        """Packed rows i0..i1."""
        raise NotImplementedError

    def _check_range(self, i0: int, i1: int) -> tuple[int, int]:
        """Validate a row range."""
        m = self.shape[0]
        i0, i1 = int(i0), int(i1)
        if not 0 <= i0 <= i1 <= m:
            raise IndexError(f"row range [{i0}, {i1}) is outside [0, {m}]")
        return i0, i1

    def _check_rows(self, row_indices: Any) -> np.ndarray:
        """Validate row indices (None = all rows) as a 1-D int64 array."""
        if row_indices is None:
            return np.arange(self.shape[0], dtype=np.int64)
        return _check_indices(row_indices, self.shape[0], "row")

    def _check_cols(self, col_indices: Any) -> np.ndarray:
        """Validate column indices as a 1-D int64 array."""
        return _check_indices(col_indices, self.shape[1], "column")

    def default_chunk(self, bytes_per_row: int | None = None) -> int:
        """Rows per chunk so that one unpacked chunk (or `bytes_per_row` per row) stays near CHUNK_BYTES."""
        per_row = max(1, self.shape[1] if bytes_per_row is None else int(bytes_per_row))
        return max(1, CHUNK_BYTES // per_row)

    def rows(self, i0: int, i1: int) -> np.ndarray:
        """Dense uint8 [i1 - i0, n] rows i0..i1 (only these rows are read)."""
        return self._read(*self._check_range(i0, i1))

    def packed_rows(self, i0: int, i1: int) -> np.ndarray:
        """Packed uint8 [i1 - i0, ceil(n/8)] rows i0..i1."""
        return self._read_packed(*self._check_range(i0, i1))

    def take(self, row_indices: Any) -> np.ndarray:
        """Dense uint8 rows at the given indices (consecutive runs are read as slices)."""
        idx = self._check_rows(row_indices)
        parts = [self._read(a, b) for a, b in _runs(idx)]
        return np.concatenate(parts) if parts else np.zeros((0, self.shape[1]), np.uint8)

    def take_packed(self, row_indices: Any) -> np.ndarray:
        """Packed rows at the given indices."""
        idx = self._check_rows(row_indices)
        parts = [self._read_packed(a, b) for a, b in _runs(idx)]
        return np.concatenate(parts) if parts else np.zeros((0, packed_width(self.shape[1])), np.uint8)

    def _index_chunks(self, row_indices: Any, rows_per_chunk: int) -> Iterator[tuple[int, np.ndarray]]:
        """(start within the selection, indices) for consecutive pieces of a row selection."""
        idx = self._check_rows(row_indices)
        step = max(1, int(rows_per_chunk))
        for s in range(0, idx.size, step):
            yield s, idx[s : s + step]

    def _chunks(
        self,
        step: int,
        row_indices: Any,
        read: Callable[[int, int], np.ndarray],
        take: Callable[[Any], np.ndarray],
    ) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, read(i0, i1)) over all rows in steps, or (position in selection, take(ids)) over a selection."""
        if row_indices is None:
            for i0 in range(0, self.shape[0], max(1, step)):
                yield i0, read(i0, min(self.shape[0], i0 + max(1, step)))
            return
        for s, idx in self._index_chunks(row_indices, step):
            yield s, take(idx)

    def iter_chunks(
        self, rows_per_chunk: int | None = None, row_indices: Any = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield (first row, dense uint8 chunk) over all rows, or (position in selection, chunk) over a selection."""
        step = self.default_chunk() if rows_per_chunk is None else int(rows_per_chunk)
        yield from self._chunks(step, row_indices, self._read, self.take)

    def iter_packed(
        self, rows_per_chunk: int | None = None, row_indices: Any = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Like `iter_chunks`, yielding packed chunks."""
        step = self.default_chunk(packed_width(self.shape[1])) if rows_per_chunk is None else int(rows_per_chunk)
        yield from self._chunks(step, row_indices, self._read_packed, self.take_packed)

    def scan_packed(
        self, rows_per_chunk: int | None = None, row_indices: Any = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Like `iter_packed`, but a chunk may live in a buffer reused by the next one: use it before moving on."""
        return self.iter_packed(rows_per_chunk, row_indices)

    def column_sums(self, row_indices: Any = None, chunk: int | None = None) -> np.ndarray:
        """Number of ones in each column over all rows (or the selected rows), streamed: int64 [n]."""
        total = np.zeros(self.shape[1], np.int64)
        step = min(self.default_chunk(), 65535) if chunk is None else min(int(chunk), 65535)
        for _, block in self.iter_chunks(step, row_indices):
            total += block.sum(axis=0, dtype=np.uint16)
        return total

    def row_sums(self, chunk: int | None = None) -> np.ndarray:
        """Number of ones in each row: int64 [m]."""
        out = np.empty(self.shape[0], np.int64)
        for i0, block in self.scan_packed(chunk):
            out[i0 : i0 + block.shape[0]] = popcount_rows(block, self.shape[1])
        return out

    def gather(self, row_indices: Any, col_indices: Any, chunk: int | None = None) -> np.ndarray:
        """Cells at (each selected row) x (each selected column): uint8 [len(rows), len(cols)], read by bytes."""
        cols = self._check_cols(col_indices)
        size = self.shape[0] if row_indices is None else self._check_rows(row_indices).size
        byte = cols >> 3
        shift = (7 - (cols & 7)).astype(np.uint8)
        out = np.empty((size, cols.size), np.uint8)
        step = self.default_chunk(4 * packed_width(self.shape[1])) if chunk is None else int(chunk)
        for s, block in self.scan_packed(step, row_indices):
            part = out[s : s + block.shape[0]]
            np.take(block, byte, axis=1, out=part, mode="clip")  # indices are checked: clip never clips
            np.right_shift(part, shift, out=part)
        out &= 1
        return out


class PackedRows(RowSource):
    """A read-only view over bit-packed rows [m, ceil(n/8)] (ndarray, memmap, zarr array, NpyRows) plus n."""

    def __init__(self, packed: Any, n: int) -> None:
        shape = tuple(getattr(packed, "shape", ()))
        if len(shape) != 2:
            raise ValueError(f"PackedRows needs a 2-D [rows, ceil(n/8)] array; got shape {shape}")
        dtype = getattr(packed, "dtype", None)
        if dtype is not None and np.dtype(dtype) != np.uint8:
            raise TypeError(f"packed rows must be uint8 (np.packbits output); got dtype {dtype}")
        n = int(n)
        if n < 0 or shape[1] != packed_width(n):
            raise ValueError(f"{n} columns pack into {packed_width(n)} bytes per row; the array has {shape[1]}")
        self.packed = packed
        self.shape = (int(shape[0]), n)

    def __repr__(self) -> str:
        return f"PackedRows(shape={self.shape}, storage={type(self.packed).__name__})"

    def _read_packed(self, i0: int, i1: int) -> np.ndarray:
        return np.asarray(self.packed[i0:i1], dtype=np.uint8)

    def _read(self, i0: int, i1: int) -> np.ndarray:
        return np.unpackbits(self._read_packed(i0, i1), axis=1, count=self.shape[1])

    def scan_packed(
        self, rows_per_chunk: int | None = None, row_indices: Any = None
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Chunks of packed rows; storage with `read_into(i0, i1, out)` (NpyRows) fills one reused buffer."""
        read_into = getattr(self.packed, "read_into", None)
        if read_into is None or row_indices is not None:
            yield from self.iter_packed(rows_per_chunk, row_indices)
            return
        m, nb = self.shape[0], packed_width(self.shape[1])
        step = max(1, self.default_chunk(nb) if rows_per_chunk is None else int(rows_per_chunk))
        buf = np.empty((min(step, m), nb), np.uint8)
        for i0 in range(0, m, step):
            view = buf[: min(m, i0 + step) - i0]
            read_into(i0, i0 + view.shape[0], view)
            yield i0, view

    def take_packed(self, row_indices: Any) -> np.ndarray:
        """Packed rows at the given indices (one fancy read for in-memory or memory-mapped arrays)."""
        if isinstance(self.packed, np.ndarray):
            return np.asarray(self.packed[self._check_rows(row_indices)])
        return super().take_packed(row_indices)

    def take(self, row_indices: Any) -> np.ndarray:
        """Dense uint8 rows at the given indices."""
        return np.unpackbits(self.take_packed(row_indices), axis=1, count=self.shape[1])

    def column_sums(self, row_indices: Any = None, chunk: int | None = None) -> np.ndarray:
        """Number of ones per column, counted on the packed bits with a bit-sliced adder tree (no unpacking).

        Whole-matrix counts over word-aligned rows (n a multiple of 64) read each chunk straight into the tree's
        buffer (no copy per chunk).
        """
        m, n = self.shape
        nb = packed_width(n)
        words = (nb + 7) // 8
        if chunk is None:  # at least 32 rows: each chunk's count is rippled into the accumulator once
            chunk = max(32, _PACKED_CHUNK_BYTES // max(1, words * 8))
        total_rows = m if row_indices is None else self._check_rows(row_indices).size
        # a power of two (the adder tree halves it level by level), no taller than the rows need
        step = min(1 << max(0, int(chunk).bit_length() - 1), 1 << max(0, (total_rows - 1).bit_length()))
        planes = int(total_rows).bit_length() + 1
        load = self._aligned_loader() if row_indices is None and nb == words * 8 else None
        if load is not None:
            acc = _count_chunks(load, [(i0, min(m, i0 + step)) for i0 in range(0, m, step)], step, words, planes)
        else:
            tree = _AdderTree(step, words)
            acc = [np.zeros(words, _WORD) for _ in range(planes)]
            for _, block in self.scan_packed(step, row_indices):
                tree.buf[: block.shape[0], :nb] = block
                _add_into(acc, tree.count(block.shape[0]))
        bits = np.unpackbits(np.stack(acc).view(np.uint8), axis=1, count=n)
        dtype = np.uint16 if len(acc) <= 16 else np.uint32 if len(acc) <= 32 else np.uint64
        counts = np.zeros(n, dtype)
        for level in range(len(acc)):
            counts |= np.left_shift(bits[level], level, dtype=dtype)
        return counts.astype(np.int64)

    def _aligned_loader(self) -> Callable[[int, int, np.ndarray], None] | None:
        """A function filling a C-contiguous uint8 [rows, packed width] buffer with rows i0..i1, where the storage
        can do it without an intermediate copy (positioned reads, in-memory arrays); else None."""
        read_into = getattr(self.packed, "read_into", None)
        if read_into is not None and getattr(self.packed, "dtype", None) == np.uint8:
            return read_into
        if isinstance(self.packed, np.ndarray):
            packed = self.packed

            def copy(i0: int, i1: int, out: np.ndarray) -> None:
                out[...] = packed[i0:i1]

            return copy
        return None


def _count_chunks(
    load: Callable[[int, int, np.ndarray], None], chunks: list[tuple[int, int]], step: int, words: int, planes: int
) -> list[np.ndarray]:
    """Bit-sliced column counts (planes, low bit first) of the given row chunks, loaded straight into one tree."""
    tree = _AdderTree(step, words)
    acc = [np.zeros(words, _WORD) for _ in range(planes)]
    for i0, i1 in chunks:
        load(i0, i1, tree.buf[: i1 - i0])
        _add_into(acc, tree.count(i1 - i0))
    return acc


class _AdderTree:
    """Bit-sliced column counts of up to `rows` packed rows, in preallocated buffers (no allocation per chunk)."""

    def __init__(self, rows: int, words: int) -> None:
        self.buf = np.zeros((rows, words * 8), np.uint8)
        self.words = self.buf.view(_WORD)
        self.levels = [np.empty((rows >> (level + 1), words), _WORD) for level in range(rows.bit_length() - 1)]
        self.generate = np.empty((max(1, rows // 2), words), _WORD)

    def count(self, c: int) -> list[np.ndarray]:
        """Planes (low bit first) of the per-column counts of the first `c` rows of `buf` (the packed block, padded
        with zero bytes); valid until the next call."""
        height = 1 << max(0, (c - 1).bit_length())
        self.buf[c:height] = 0
        planes = [self.words[:height]]
        level = 0
        while height > 1:
            h = height // 2
            gen = self.generate[:h]
            carry = self.levels[level][:h]
            low = [p[:h] for p in planes]
            high = [p[h:height] for p in planes]
            np.bitwise_and(low[0], high[0], out=carry)
            low[0] ^= high[0]
            for a, b in zip(low[1:], high[1:], strict=True):
                np.bitwise_and(a, b, out=gen)  # generate
                a ^= b  # propagate
                np.bitwise_and(a, carry, out=b)  # b is spent: propagate & carry
                a ^= carry  # sum bit
                np.bitwise_or(gen, b, out=carry)  # carry out
            planes = [*low, carry]
            height, level = h, level + 1
        return [p[0] for p in planes]


def _add_into(acc: list[np.ndarray], planes: list[np.ndarray]) -> None:
    """Add a bit-sliced number (planes, low bit first) into a bit-sliced accumulator in place (ripple carry)."""
    if len(planes) > len(acc):
        raise OverflowError("bit-sliced accumulator too narrow")  # cannot happen: acc is sized for all rows
    carry: np.ndarray | None = None
    for level, a in enumerate(acc):
        x = planes[level] if level < len(planes) else None
        if x is None and carry is None:
            return
        if x is None:
            x, carry = carry, None
        if carry is None:
            new_carry = a & x
            a ^= x
        else:
            propagate = a ^ x
            new_carry = (a & x) | (propagate & carry)
            np.bitwise_xor(propagate, carry, out=a)
        carry = new_carry
        if level + 1 >= len(planes) and not carry.any():
            return  # nothing left to add


class DenseRows(RowSource):
    """A read-only view over a dense 0/1 [m, n] array-like (ndarray, memmap, `memmap.T`, zarr array)."""

    def __init__(self, data: Any) -> None:
        shape = tuple(getattr(data, "shape", ()))
        if len(shape) != 2:
            raise ValueError(f"DenseRows needs a 2-D [rows, columns] array; got shape {shape}")
        dtype = np.dtype(getattr(data, "dtype", np.uint8))
        if dtype not in (np.dtype(np.uint8), np.dtype(np.bool_)):
            raise TypeError(f"a dense 0/1 matrix must be uint8 or bool; got dtype {dtype}")
        self.data = data
        self.shape = (int(shape[0]), int(shape[1]))

    def __repr__(self) -> str:
        return f"DenseRows(shape={self.shape}, storage={type(self.data).__name__})"

    def _read(self, i0: int, i1: int) -> np.ndarray:
        block = np.asarray(self.data[i0:i1])
        return np.ascontiguousarray(block.view(np.uint8) if block.dtype == np.bool_ else block)

    def _read_packed(self, i0: int, i1: int) -> np.ndarray:
        return np.packbits(self._read(i0, i1), axis=1)

    def row_sums(self, chunk: int | None = None) -> np.ndarray:
        """Number of ones in each row: int64 [m]."""
        out = np.empty(self.shape[0], np.int64)
        for i0, block in self.iter_chunks(chunk):
            out[i0 : i0 + block.shape[0]] = block.sum(axis=1, dtype=np.int64)
        return out

    def gather(self, row_indices: Any, col_indices: Any, chunk: int | None = None) -> np.ndarray:
        """Cells at (each selected row) x (each selected column): uint8 [len(rows), len(cols)]."""
        cols = self._check_cols(col_indices)
        rows = self._check_rows(row_indices)
        out = np.empty((rows.size, cols.size), np.uint8)
        for s, block in self.iter_chunks(chunk, rows):
            out[s : s + block.shape[0]] = block[:, cols]
        return out


def as_rows(x: Any, n: int | None = None) -> RowSource:
    """A RowSource for x: itself if already one, PackedRows if `n` is given, else DenseRows (1-D = one row)."""
    if isinstance(x, RowSource):
        if n is not None and int(n) != x.shape[1]:
            raise ValueError(f"n={n} does not match the rows' {x.shape[1]} columns")
        return x
    if isinstance(x, np.ndarray) and x.ndim == 1:
        x = x[None, :]
    if n is not None:
        return PackedRows(x, n)
    return DenseRows(x)


class NpyRows:
    """Row slices of a 2-D C-order .npy file read with positioned reads (no memory map, no whole-file load)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            self._offset = f.tell()
        if len(shape) != 2 or fortran or dtype.hasobject:
            raise ValueError(f"{self.path}: NpyRows reads 2-D C-order numeric arrays; got shape {shape}")
        self.shape = (int(shape[0]), int(shape[1]))
        self.dtype = dtype
        self.ndim = 2
        self._row_bytes = self.shape[1] * dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: slice) -> np.ndarray:
        if not isinstance(index, slice):
            raise TypeError(f"NpyRows supports row slices only (a[i0:i1]); got {index!r}")
        i0, i1, step = index.indices(self.shape[0])
        if step != 1:
            raise ValueError("NpyRows supports contiguous row slices only")
        out = np.empty((max(0, i1 - i0), self.shape[1]), self.dtype)
        self.read_into(i0, i0 + out.shape[0], out)
        return out

    def read_into(self, i0: int, i1: int, out: np.ndarray) -> None:
        """Read rows i0..i1 into a C-contiguous array of shape [i1 - i0, columns] and this file's dtype."""
        if out.shape != (i1 - i0, self.shape[1]) or out.dtype != self.dtype or not out.flags.c_contiguous:
            raise ValueError(f"read_into needs a C-contiguous {self.dtype} array of shape {(i1 - i0, self.shape[1])}")
        if not 0 <= i0 <= i1 <= self.shape[0]:
            raise IndexError(f"row range [{i0}, {i1}) is outside [0, {self.shape[0]}]")
        view = memoryview(out.reshape(-1).view(np.uint8))
        offset, done = self._offset + i0 * self._row_bytes, 0
        fd = os.open(self.path, os.O_RDONLY)
        try:
            while done < view.nbytes:
                got = os.preadv(fd, [view[done:]], offset + done)
                if got == 0:
                    raise OSError(f"{self.path}: short read (file truncated?)")
                done += got
        finally:
            os.close(fd)
