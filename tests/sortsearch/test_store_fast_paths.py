"""The store's fast paths give exactly what the plain computations give: intervals from packed rows (only the
observed cells unpacked, rows with the same ranked positions in one call) vs dense rows, popcounts vs unpacked bits,
multi-chunk reads and writes vs a dense mirror."""

import numpy as np
import pytest

from lifelong.sortsearch import best_estimates, store_cells
from lifelong.sortsearch.best_estimates import packed_row_intervals, row_intervals
from lifelong.sortsearch.store import BenchStore


def _rows_and_masks(rng: np.random.Generator, rows: int, n: int, n_e: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense 0/1 cells and observed masks [rows, n]: shared, own, empty and full masks (bits beyond n_e too)."""
    correct = (rng.random((rows, n)) < 0.6).astype(np.uint8)
    shared = np.zeros(n, np.uint8)
    shared[rng.choice(n, size=min(n, 12), replace=False)] = 1
    seen = np.empty((rows, n), np.uint8)
    for i in range(rows):
        kind = i % 5
        if kind in (0, 1):  # runs of rows observed on the same samples: one accuracy_interval call
            seen[i] = shared
        elif kind == 2:
            seen[i] = rng.random(n) < 0.2
        elif kind == 3:
            seen[i] = 0 if i % 2 else 1  # nothing observed, or every cell
        else:
            seen[i] = 0
            seen[i, rng.choice(n, size=1)] = 1
    return correct, seen


@pytest.mark.parametrize("method", ["dp-uniform", "dp-random"])
@pytest.mark.parametrize(("n", "n_e"), [(61, 61), (64, 57), (200, 133), (9, 1)])
def test_packed_row_intervals_equal_the_dense_computation(method, n, n_e):
    rng = np.random.default_rng([n, n_e, len(method)])
    correct, seen = _rows_and_masks(rng, 23, n, n_e)
    order = rng.permutation(n_e)
    thresholds = rng.integers(-2, n_e + 3, size=23)  # some outside 0..n_e: no interval
    thresholds[:4] = [0, n_e, 1, n_e // 2]
    dense = row_intervals(correct[:, :n_e], seen[:, :n_e], order, thresholds, method)
    rank = np.empty(n_e, np.int64)
    rank[order] = np.arange(n_e)
    packed = packed_row_intervals(np.packbits(correct, axis=1), np.packbits(seen, axis=1), rank, thresholds, method)
    assert packed == dense  # NamedTuples of floats: exactly equal, field by field


def test_nonzero_bytes_equal_numpy_nonzero():
    rng = np.random.default_rng(3)
    for rows, width in [(1, 1), (3, 7), (5, 8), (4, 17), (9, 64), (2, 0)]:
        block = np.where(rng.random((rows, width)) < 0.1, rng.integers(1, 256, (rows, width)), 0).astype(np.uint8)
        block[:, -1:] = rng.integers(0, 256, (rows, min(1, width)))
        got = best_estimates._nonzero_bytes(block)
        for a, b in zip(got, np.nonzero(block), strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("table", [False, True])
def test_bit_counts_equal_the_unpacked_bits(monkeypatch, table):
    if table:  # numpy < 2.0 has no bitwise_count: the lookup table
        monkeypatch.delattr(np, "bitwise_count", raising=False)
    rng = np.random.default_rng(4)
    packed = rng.integers(0, 256, (7, 29), dtype=np.uint8)
    full = packed[:, 3:]  # a block whose rows do not start on 8-byte boundaries
    np.testing.assert_array_equal(store_cells.bit_counts(full), np.unpackbits(full, axis=1).sum(axis=1))
    for n_bits in (0, 1, 8, 13, 200, 208):
        want = np.unpackbits(packed, axis=1, count=n_bits).sum(axis=1)
        np.testing.assert_array_equal(store_cells.bit_counts(packed, n_bits), want)


def test_pieces_cover_the_ids_within_adjacent_chunks():
    ids = np.array([40, 3, 4, 5, 17, 16, 30, 31, 32, 6, 100], np.int64)
    seen = []
    for positions, r0, r1, rows in store_cells.pieces(ids, 4, 8):
        np.testing.assert_array_equal(ids[positions], r0 + rows)
        assert r0 == ids[positions].min() and r1 == ids[positions].max() + 1 and r1 - r0 <= 8
        seen += ids[positions].tolist()
        chunks = np.unique(ids[positions] // 4)
        assert np.all(np.diff(chunks) == 1)  # never a gap of a whole chunk inside one read
    assert sorted(seen) == sorted(ids.tolist())


@pytest.mark.parametrize("chunks", [(3, 16), (4, 8), (64, 1024)])
def test_reads_writes_and_counts_match_a_dense_mirror(tmp_path, chunks):
    rng = np.random.default_rng(chunks)
    n, m = 77, 19
    with BenchStore.create(tmp_path / "store", chunk_models=chunks[0], chunk_samples=chunks[1]) as store:
        store.add_samples([dict(source="s", domain="d", label=0, content_hash=f"h{i}") for i in range(n)])
        truth = (rng.random((m, n)) < 0.5).astype(np.uint8)
        seen = np.zeros((m, n), np.uint8)
        store.add_models([f"m{i}" for i in range(7)], rows=np.packbits(truth[:7], axis=1))
        seen[:7] = 1
        store.add_models([f"m{i}" for i in range(7, 12)], rows=np.packbits(truth[7:12], axis=1), observed=False)
        store.add_models([f"m{i}" for i in range(12, m)])
        truth[12:] = 0
        for _ in range(6):
            models = rng.choice(m, size=rng.integers(1, m), replace=False)
            samples = rng.choice(n, size=rng.integers(1, n), replace=False)
            values = (rng.random((models.size, samples.size)) < 0.5).astype(np.uint8)
            observed = bool(rng.integers(0, 2))
            store.write_rows(models, samples, values, observed=observed)
            cells = np.ix_(models, samples)
            keep = seen[cells].astype(bool) & (not observed)
            truth[cells] = np.where(keep, truth[cells], values)
            if observed:
                seen[cells] = 1
        ids = rng.permutation(m)[: m - 3]
        np.testing.assert_array_equal(store.read_rows(ids), np.packbits(truth[ids], axis=1))
        np.testing.assert_array_equal(store.read_observed(ids), np.packbits(seen[ids], axis=1))
        accuracies = store.accuracies(ids)
        for i in ids.tolist():
            assert accuracies[i].row_accuracy == truth[i].sum() / n
            assert accuracies[i].observed_fraction == seen[i].sum() / n
        assert store.status()["observed_fraction"] == seen.sum() / (n * m)


def test_predicted_rows_over_junk_of_a_killed_insert_are_unobserved(tmp_path):
    """add_models(rows, observed=False) zeroes the observed bits only of rows a killed insert may have written;
    rows beyond the arrays' old size read as zeros without a write."""
    import zarr

    with BenchStore.create(tmp_path / "store", chunk_models=3, chunk_samples=16) as store:
        store.add_samples([dict(source="s", domain="d", label=0, content_hash=f"h{i}") for i in range(20)])
        store.add_models(["a"], rows=np.packbits(np.ones((1, 20), np.uint8), axis=1))
        for name in ("correct", "observed"):
            array = zarr.open_array(store.path / f"{name}.zarr", mode="r+")
            array.resize((4, 3))
            array[1:4, :] = 0xFF  # rows of an insert that never committed
        rows = np.packbits(np.eye(5, 20, 2, dtype=np.uint8), axis=1)
        assert store.add_models([f"p{i}" for i in range(5)], rows=rows, observed=False) == [1, 2, 3, 4, 5]
        np.testing.assert_array_equal(store.read_rows(range(1, 6)), rows)
        np.testing.assert_array_equal(store.read_observed(range(1, 6)), np.zeros((5, 3), np.uint8))
        assert store.status()["observed_fraction"] == 20 / (6 * 20)


def test_rows_with_an_observed_mask_store_what_predictions_plus_facts_store(tmp_path):
    """add_models(rows, observed=mask) in one write = add_models(predictions, observed=False) then write_rows(facts)."""
    rng = np.random.default_rng(5)
    n, k = 45, 7
    predicted = (rng.random((k, n)) < 0.5).astype(np.uint8)
    facts_at = np.sort(rng.choice(n, size=9, replace=False))
    facts = (rng.random((k, facts_at.size)) < 0.5).astype(np.uint8)
    merged, mask = predicted.copy(), np.zeros((k, n), np.uint8)
    merged[:, facts_at], mask[:, facts_at] = facts, 1
    stored = []
    for name in ("two-steps", "one-step"):
        with BenchStore.create(tmp_path / name, chunk_models=3, chunk_samples=16) as store:
            store.add_samples([dict(source="s", domain="d", label=0, content_hash=f"h{i}") for i in range(n)])
            names = [f"m{i}" for i in range(k)]
            if name == "two-steps":
                store.add_models(names, rows=np.packbits(predicted, axis=1), observed=False)
                store.write_rows(range(k), facts_at, facts, observed=True)
            else:
                store.add_models(names, rows=np.packbits(merged, axis=1), observed=np.packbits(mask, axis=1))
            stored.append((store.read_rows(range(k)), store.read_observed(range(k)), store.status()))
    for a, b in zip(*stored, strict=True):
        np.testing.assert_equal(a, b)
    with BenchStore.open(tmp_path / "one-step") as store, pytest.raises(ValueError, match="needs the rows"):
        store.add_models(["x"], observed=np.zeros((1, 6), np.uint8))
