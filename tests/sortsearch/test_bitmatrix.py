"""PackedRows / DenseRows / NpyRows: every chunked operation equals the same operation on the dense matrix."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lifelong.sortsearch.bitmatrix import (
    DenseRows,
    NpyRows,
    PackedRows,
    as_rows,
    pack,
    packed_width,
    popcount_rows,
    unpack,
)


class SliceOnly:
    """A zarr-like array: shape, dtype and row slicing only."""

    def __init__(self, data: np.ndarray) -> None:
        self._data = data
        self.shape = data.shape
        self.dtype = data.dtype

    def __getitem__(self, index: slice) -> np.ndarray:
        assert isinstance(index, slice)
        return self._data[index].copy()


def dense(m: int, n: int, seed: int = 0, p: float = 0.4) -> np.ndarray:
    """A random 0/1 uint8 matrix."""
    return (np.random.default_rng(seed).random((m, n)) < p).astype(np.uint8)


def views(D: np.ndarray, tmp_path) -> list:
    """The same matrix behind every supported storage."""
    packed = pack(D)
    np.save(tmp_path / "packed.npy", packed)
    return [
        PackedRows(packed, D.shape[1]),
        PackedRows(np.load(tmp_path / "packed.npy", mmap_mode="r"), D.shape[1]),
        PackedRows(NpyRows(tmp_path / "packed.npy"), D.shape[1]),
        PackedRows(SliceOnly(packed), D.shape[1]),
        DenseRows(D),
        DenseRows(np.ascontiguousarray(D.T).T),  # a transposed view, as for sample insertion
    ]


@pytest.mark.parametrize("n", [1, 7, 8, 9, 64, 65, 1000])
def test_pack_roundtrip_matches_numpy(n: int) -> None:
    D = dense(5, n, seed=n)
    packed = pack(D)
    assert packed.shape == (5, packed_width(n))
    assert np.array_equal(packed, np.packbits(D, axis=1))
    assert np.array_equal(unpack(packed, n), D)


def test_pack_rejects_non_binary_and_bad_shapes() -> None:
    with pytest.raises(ValueError, match="holds 2"):
        pack(np.array([[0, 1, 2]], np.uint8))
    with pytest.raises(ValueError, match="2-D"):
        pack(np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="shape"):
        unpack(np.zeros((2, 3), np.uint8), 8)
    with pytest.raises(ValueError, match="bytes per row"):
        PackedRows(np.zeros((2, 3), np.uint8), 8)
    with pytest.raises(TypeError, match="uint8"):
        PackedRows(np.zeros((2, 1), np.int16), 8)
    with pytest.raises(TypeError, match="uint8 or bool"):
        DenseRows(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (37, 1000), (130, 333)])
def test_operations_equal_dense(shape: tuple[int, int], tmp_path) -> None:
    m, n = shape
    D = dense(m, n, seed=m * n)
    rng = np.random.default_rng(1)
    sel = np.sort(rng.choice(m, size=max(1, m // 2), replace=False))
    cols = rng.integers(0, n, 40)
    for rows in views(D, tmp_path):
        assert rows.shape == (m, n)
        assert np.array_equal(rows.rows(0, m), D)
        assert np.array_equal(rows.rows(m // 3, m), D[m // 3 :])
        assert np.array_equal(rows.take(sel), D[sel])
        assert np.array_equal(np.concatenate([c for _, c in rows.iter_chunks(3)]), D)
        assert np.array_equal(np.concatenate([c for _, c in rows.iter_packed(2)]), pack(D))
        for chunk in (None, 1, 3, 64):
            assert np.array_equal(rows.column_sums(chunk=chunk), D.sum(axis=0))
            assert np.array_equal(rows.row_sums(chunk=chunk), D.sum(axis=1))
        assert rows.column_sums().dtype == np.int64
        assert np.array_equal(rows.column_sums(sel), D[sel].sum(axis=0))
        assert np.array_equal(rows.gather(sel, cols), D[sel][:, cols])
        assert np.array_equal(rows.gather(None, cols, chunk=2), D[:, cols])


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 200), seed=st.integers(0, 10**6), chunk=st.integers(1, 40))
def test_column_sums_property(m: int, n: int, seed: int, chunk: int) -> None:
    D = dense(m, n, seed=seed, p=np.random.default_rng(seed).random())
    rows = PackedRows(pack(D), n)
    assert np.array_equal(rows.column_sums(chunk=chunk), D.sum(axis=0))
    assert np.array_equal(rows.row_sums(), D.sum(axis=1))


def test_popcount_ignores_padding_bits() -> None:
    D = dense(4, 13)
    packed = pack(D)
    packed[:, -1] |= 0b0000_0111  # garbage in the 3 padding bits
    assert np.array_equal(popcount_rows(packed, 13), D.sum(axis=1))
    assert np.array_equal(PackedRows(packed, 13).row_sums(), D.sum(axis=1))
    assert np.array_equal(PackedRows(packed, 13).column_sums(), D.sum(axis=0))


def test_bool_dense_and_as_rows() -> None:
    D = dense(6, 20)
    assert np.array_equal(DenseRows(D.astype(bool)).rows(0, 6), D)
    assert isinstance(as_rows(D), DenseRows)
    assert isinstance(as_rows(pack(D), 20), PackedRows)
    assert as_rows(D[0]).shape == (1, 20)
    with pytest.raises(ValueError, match="does not match"):
        as_rows(PackedRows(pack(D), 20), 21)


def test_index_errors_are_clear() -> None:
    rows = PackedRows(pack(dense(3, 10)), 10)
    with pytest.raises(IndexError, match="row range"):
        rows.rows(2, 5)
    with pytest.raises(IndexError, match="row indices"):
        rows.take([0, 3])
    with pytest.raises(IndexError, match="column indices"):
        rows.gather(None, [10])


def test_npy_rows_reads_slices_only(tmp_path) -> None:
    D = dense(9, 11)
    np.save(tmp_path / "d.npy", D)
    rows = NpyRows(tmp_path / "d.npy")
    assert rows.shape == (9, 11) and len(rows) == 9
    assert np.array_equal(rows[2:7], D[2:7])
    assert np.array_equal(rows[:], D)
    out = np.empty((3, 11), np.uint8)
    rows.read_into(1, 4, out)
    assert np.array_equal(out, D[1:4])
    with pytest.raises(TypeError, match="row slices"):
        rows[3]
    with pytest.raises(ValueError, match="contiguous"):
        rows[::2]


def test_column_sums_read_straight_into_the_counter_match_numpy(tmp_path):
    from lifelong.sortsearch.bitmatrix import NpyRows, PackedRows, pack

    rng = np.random.default_rng(5)
    for m, n in ((1, 64), (70, 640), (33, 129), (300, 128)):  # word-aligned rows (direct reads) and not
        dense = (rng.random((m, n)) < 0.4).astype(np.uint8)
        np.save(tmp_path / "p.npy", pack(dense))
        for rows in (PackedRows(NpyRows(tmp_path / "p.npy"), n), PackedRows(pack(dense), n)):
            for chunk in (None, 1, 32):
                assert np.array_equal(rows.column_sums(chunk=chunk), dense.sum(axis=0))
