"""BenchStore: growth along both axes, facts vs predictions, registry errors, sort versions, integrity checks."""

import sqlite3

import numpy as np
import pytest
import zarr

from lifelong.sortsearch.store import BenchStore


def _records(prefix: str, count: int, domain: str = "clean") -> list[dict]:
    """Sample records with unique content hashes."""
    return [dict(source=prefix, domain=domain, label=i % 10, content_hash=f"{prefix}-{i}") for i in range(count)]


def _unpack(packed: np.ndarray, n: int) -> np.ndarray:
    """Dense 0/1 rows from packed rows."""
    return np.unpackbits(packed, axis=1, count=n)


@pytest.fixture
def store(tmp_path):
    """An empty store with tiny chunks, so every test crosses chunk borders on both axes."""
    with BenchStore.create(tmp_path / "store", chunk_models=3, chunk_samples=16) as opened:
        yield opened


def test_create_open_round_trip(tmp_path):
    path = tmp_path / "store"
    with BenchStore.create(path, chunk_models=2, chunk_samples=8) as store:
        store.add_samples(_records("cifar", 5) + _records("cinic", 4, domain="shifted"))
        rows = np.packbits(np.eye(3, 9, dtype=np.uint8), axis=1)
        store.add_models(["a", "b", "c"], [{"params": 1}, {}, {"tags": ["x"]}], rows=rows)
        version = store.save_sort(np.arange(9)[::-1], [0, 1])
    with BenchStore.open(path) as store:
        assert store.status() == {"n": 9, "m": 3, "observed_fraction": 1.0, "estimated_rows": 0, "latest_sort": version}
        np.testing.assert_array_equal(store.read_rows([0, 1, 2]), rows)
        assert store.model_by_name("c").id == 2 and store.model_by_name("a").metadata == {"params": 1}
        np.testing.assert_array_equal(store.sample_ids(domain="shifted"), [5, 6, 7, 8])
        np.testing.assert_array_equal(store.sample_ids(), np.arange(9))
        np.testing.assert_array_equal(store.model_ids(), [0, 1, 2])
        assert store.check() == []
    with pytest.raises(FileExistsError, match="already exists"):
        BenchStore.create(path)
    with pytest.raises(FileNotFoundError, match="create it"):
        BenchStore.open(tmp_path / "missing")
    with pytest.raises(ValueError, match="multiple of 8"):
        BenchStore.create(tmp_path / "other", chunk_samples=12)


def test_growing_both_axes_matches_a_dense_mirror(store):
    rng = np.random.default_rng(0)
    correct = np.zeros((0, 0), dtype=np.uint8)
    observed = np.zeros((0, 0), dtype=np.uint8)
    for step in range(12):
        new_n = int(rng.integers(1, 12))
        store.add_samples(_records(f"s{step}", new_n))
        correct = np.pad(correct, ((0, 0), (0, new_n)))
        observed = np.pad(observed, ((0, 0), (0, new_n)))
        m, n = correct.shape
        new_m = int(rng.integers(1, 4))
        if step % 2:
            dense = rng.integers(0, 2, (new_m, n), dtype=np.uint8)
            ids = store.add_models([f"m{step}-{i}" for i in range(new_m)], rows=np.packbits(dense, axis=1))
            correct, observed = np.vstack([correct, dense]), np.vstack([observed, np.ones_like(dense)])
        else:
            ids = store.add_models([f"m{step}-{i}" for i in range(new_m)])
            correct, observed = np.pad(correct, ((0, new_m), (0, 0))), np.pad(observed, ((0, new_m), (0, 0)))
        assert ids == list(range(m, m + new_m))
        rows = rng.choice(m + new_m, size=min(4, m + new_m), replace=False)
        cols = rng.choice(n, size=min(9, n), replace=False)
        values = rng.integers(0, 2, (rows.size, cols.size))
        is_fact = bool(step % 3)
        store.write_rows(rows, cols, values, observed=is_fact)
        cells = np.ix_(rows, cols)
        writable = np.ones(values.shape, bool) if is_fact else observed[cells] == 0
        correct[cells] = np.where(writable, values, correct[cells])
        observed[cells] |= is_fact
        everyone = store.model_ids()[::-1]
        np.testing.assert_array_equal(_unpack(store.read_rows(everyone), n), correct[everyone])
        np.testing.assert_array_equal(_unpack(store.read_observed(everyone), n), observed[everyone])
    accuracies = store.accuracies()
    np.testing.assert_allclose([accuracies[i].accuracy for i in range(correct.shape[0])], correct.mean(axis=1))
    np.testing.assert_allclose([accuracies[i].observed_fraction for i in range(correct.shape[0])], observed.mean(1))
    assert store.status()["observed_fraction"] == pytest.approx(observed.mean())
    assert store.check() == []


def test_facts_win_over_predictions_and_accuracy_kinds(store):
    store.add_samples(_records("s", 20))
    full = np.packbits(np.tile([1, 0], 10).astype(np.uint8)[None], axis=1)
    store.add_models(["full"], rows=full)
    store.add_models(["partial", "estimated"])
    store.write_rows([1, 2], [0, 1, 2, 3], np.array([[1, 1, 1, 1], [0, 0, 0, 0]]))
    store.write_rows([1], [0, 1, 4], np.array([[0, 0, 1]]), observed=False)  # cells 0, 1 are facts: kept
    np.testing.assert_array_equal(_unpack(store.read_rows([1]), 20)[0, :6], [1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(_unpack(store.read_observed([1]), 20)[0, :6], [1, 1, 1, 1, 0, 0])
    version = store.save_sort(np.arange(20), [0])
    store.write_estimated_row(2, np.packbits(np.ones(20, np.uint8)), 14, version, "dp-uniform", 4)
    estimated = _unpack(store.read_rows([2]), 20)[0]
    np.testing.assert_array_equal(estimated, [0] * 4 + [1] * 16)  # observed zeros survive the all-ones prediction
    accuracies = store.accuracies()
    assert accuracies[0][:3] == (0.5, "observed", 1.0) and accuracies[0].low == accuracies[0].high == 0.5
    assert accuracies[1][:3] == (5 / 20, "mixed", 4 / 20) and accuracies[1].low is None
    estimated = accuracies[2]
    assert estimated.kind == "estimated" and estimated.observed_fraction == 4 / 20
    assert estimated.row_accuracy == 16 / 20 and estimated.threshold_accuracy == 14 / 20
    # the best estimate: k/n = 0.7 corrected by the mean residual -1 on the 4 facts (the step said right, all wrong)
    assert estimated.accuracy == 0.0 and estimated.low == 0.0 and estimated.high > 0.0
    assert store.status()["estimated_rows"] == 1
    with pytest.raises(ValueError, match="sort version 7 does not exist"):
        store.write_estimated_row(1, np.zeros(3, np.uint8), 0, 7, "dp", 0)


def test_duplicates_are_refused_and_leave_the_store_unchanged(store):
    store.add_samples(_records("s", 4))
    store.add_models(["resnet"])
    with pytest.raises(ValueError, match="content_hash 's-2' is already in the store"):
        store.add_samples(_records("t", 2) + [dict(source="x", domain="d", label=0, content_hash="s-2")])
    with pytest.raises(ValueError, match="duplicate content_hash 't-0' within"):
        store.add_samples(_records("t", 1) * 2)
    with pytest.raises(ValueError, match="model named 'resnet' is already in the store"):
        store.add_models(["vit", "resnet"])
    with pytest.raises(ValueError, match="duplicate model name 'vit'"):
        store.add_models(["vit", "vit"])
    with pytest.raises(ValueError, match="expected exactly"):
        store.add_samples([dict(source="x", content_hash="new")])
    assert (store.status()["n"], store.status()["m"]) == (4, 1)
    assert store.check() == []


def test_bad_cell_writes_name_the_problem(store):
    store.add_samples(_records("s", 10))
    store.add_models(["a"])
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        store.add_models(["b", "c"], rows=np.zeros((2, 1), np.uint8))
    with pytest.raises(IndexError, match="sample id 10 is out of range"):
        store.write_rows([0], [10], np.ones((1, 1)))
    with pytest.raises(ValueError, match="0/1 of shape"):
        store.write_rows([0], [1, 2], np.array([[2, 0]]))
    with pytest.raises(ValueError, match="duplicates"):
        store.read_rows([0, 0])
    with pytest.raises(ValueError, match="no samples"):
        BenchStore.create(store.path.parent / "empty").accuracies()


def test_sort_versions(store):
    store.add_samples(_records("s", 6))
    store.add_models(["a", "b"])
    with pytest.raises(LookupError, match="no saved sort"):
        store.latest_sort()
    first = store.save_sort(np.array([5, 4, 3, 2, 1, 0]), [0, 1])
    second = store.save_sort(np.array([0, 2, 4, 1, 3, 5]), [1])
    assert (first, second) == (1, 2)
    version, order = store.latest_sort()
    assert version == 2 and order.dtype == np.int32
    np.testing.assert_array_equal(order, [0, 2, 4, 1, 3, 5])
    np.testing.assert_array_equal(store.load_sort(1), [5, 4, 3, 2, 1, 0])
    with pytest.raises(ValueError, match="not a permutation"):
        store.save_sort(np.array([0, 0, 1, 2, 3, 4]), [0])
    with pytest.raises(ValueError, match="should cover all 6 samples"):
        store.save_sort(np.arange(5), [0])
    with pytest.raises(IndexError, match="model id 9"):
        store.save_sort(np.arange(6), [9])
    assert store.status()["latest_sort"] == 2


def test_check_finds_planted_problems(store):
    store.add_samples(_records("s", 10))
    store.add_models(["a", "b"])
    store.save_sort(np.arange(10), [0])
    store.save_sort(np.arange(10), [1])
    assert store.check() == []
    sorts = store.path / "sorts"
    np.save(sorts / "v000001.npy", np.zeros(10, np.int32))  # no longer a permutation
    (sorts / "v000002.npy").unlink()
    np.save(sorts / "v000099.npy", np.arange(10))  # no registry entry
    (store.path / "correct.zarr" / "zarr.abc.partial").write_bytes(b"half")
    with sqlite3.connect(store.path / "registry.sqlite") as con:
        con.execute(
            "INSERT INTO estimated_rows (model_id, threshold, n_samples, sort_version, method, budget, created) "
            "VALUES (7, 3, 10, 1, 'dp', 4, 'now')"
        )
        con.execute("UPDATE meta SET value = 40 WHERE key = 'n'")
    problems = "\n".join(store.check())
    for expected in [
        "sort version 1 (v000001.npy): order is not a permutation",
        "sort version 2 (v000002.npy): file missing",
        "orphan file " + str(sorts / "v000099.npy"),
        "zarr.abc.partial: left by an interrupted write",
        "estimated row of model 7 names no registered model",
        "meta n = 40 but table samples has 10 rows",
        "correct is uint8 with 2 rows x 2 bytes, but the registry needs uint8 with at least 2 rows x 5 bytes",
    ]:
        assert expected in problems


def test_leftovers_of_a_killed_writer_are_ignored_then_cleaned(store):
    """What a SIGKILL can leave (larger arrays, junk rows beyond m, temp files, the marker): reads and check() cope."""
    store.add_samples(_records("s", 12))
    store.add_models(["a"], rows=np.packbits(np.ones((1, 12), np.uint8), axis=1))
    for name in ("correct", "observed"):
        array = zarr.open_array(store.path / f"{name}.zarr", mode="r+")
        array.resize((5, 4))
        array[1:5, :2] = 0xFF  # rows of an insert that never committed
    (store.path / "observed.zarr" / "c" / "0.1234.partial").write_bytes(b"torn")
    (store.path / "sorts" / "v000001.npy").write_bytes(b"never registered")
    (store.path / "WRITING").write_text("12345")
    assert store.check() == []  # check() takes the write lock, which recovers first
    assert not (store.path / "WRITING").exists() and not list(store.path.rglob("*.partial"))
    assert store.add_models(["b", "c"]) == [1, 2]
    np.testing.assert_array_equal(store.read_rows([1, 2]), np.zeros((2, 2), np.uint8))
    np.testing.assert_array_equal(store.read_observed([1, 2]), np.zeros((2, 2), np.uint8))
    assert store.accuracies()[0][:3] == (1.0, "observed", 1.0)


def _estimated_store(path):
    """A store with 8 ranking models over 64 samples, sorted, and one model added from 16 planned samples."""
    from lifelong.sortsearch.insert import add_full_model, add_model, plan_model, sort_store

    rng = np.random.default_rng(0)
    truth = (rng.random((9, 1)) > rng.random((1, 64))).astype(np.uint8)
    truth = np.where(rng.random(truth.shape) < 0.1, 1 - truth, truth)
    store = BenchStore.create(path, chunk_models=4, chunk_samples=16)
    store.add_samples(_records("s", 64))
    for i in range(8):
        add_full_model(store, f"rank{i}", truth[i])
    sort_store(store)
    plan = plan_model(store, 16, sampling="uniform")  # the step's interval, recomputed from cells on migration
    model_id, _ = add_model(store, "new", plan, truth[8, plan.sample_ids])
    return store, model_id


def test_a_format_1_store_opens_and_reports_best_estimates(tmp_path):
    """Stores written before the best estimate was kept (registry format 1) open, migrate and fill it in."""
    store, model_id = _estimated_store(tmp_path / "store")
    fresh = store.accuracies([model_id])[model_id]
    store.close()
    with sqlite3.connect(tmp_path / "store" / "registry.sqlite") as con:  # rewind the registry to format 1
        for column in ("estimate", "low", "high", "confidence", "interval", "row_ones"):
            con.execute(f"ALTER TABLE estimated_rows DROP COLUMN {column}")
        con.execute("UPDATE meta SET value = 1 WHERE key = 'format_version'")
    with BenchStore.open(tmp_path / "store") as reopened:
        assert reopened.accuracies([model_id])[model_id] == pytest.approx(fresh)
        assert reopened.estimates()[model_id].interval is not None and reopened.check() == []
    with sqlite3.connect(tmp_path / "store" / "registry.sqlite") as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == (2,)


def test_a_store_appears_only_when_built_completely(tmp_path):
    """Issue 11: a killed `bench import` left an empty store that check() called ok and a re-import refused."""
    import subprocess
    import sys

    target = tmp_path / "store"
    script = (
        "import os, signal, sys\n"
        "from lifelong.sortsearch.store import BenchStore\n"
        "with BenchStore.building(sys.argv[1]) as store:\n"
        "    store.add_samples([dict(source='s', domain='d', label=0, content_hash='h')])\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert subprocess.run([sys.executable, "-c", script, str(target)], timeout=120).returncode == -9
    assert not target.exists()  # only the hidden staging folder is left
    with pytest.raises(RuntimeError), BenchStore.building(target) as store:
        store.add_samples(_records("s", 3))
        raise RuntimeError("an error while filling it")
    assert not target.exists() and len(list(tmp_path.glob(".store.*.partial"))) == 1
    with BenchStore.building(target) as store:
        store.add_samples(_records("s", 3))
    with BenchStore.open(target) as store:
        assert store.size() == (3, 0)


def test_building_replaces_an_empty_store_but_never_a_filled_one(tmp_path):
    BenchStore.create(tmp_path / "empty").close()
    with BenchStore.building(tmp_path / "empty", replace_empty=True) as store:
        store.add_samples(_records("s", 2))
    with BenchStore.open(tmp_path / "empty") as store:
        assert store.size() == (2, 0)
    with pytest.raises(FileExistsError, match="already holds a store with 0 models x 2 samples"):
        with BenchStore.building(tmp_path / "empty", replace_empty=True) as store:
            store.add_samples(_records("t", 5))
    with BenchStore.open(tmp_path / "empty") as store:
        assert store.size() == (2, 0)
    assert not list(tmp_path.glob(".*.partial"))
    with BenchStore.building(tmp_path / "empty", replace=True) as store:  # asked to: replaced when complete
        store.add_samples(_records("t", 5))
    with BenchStore.open(tmp_path / "empty") as store:
        assert store.size() == (5, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # the old store is gone, no leftovers
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a benchmark store"):
        with BenchStore.building(tmp_path / "other", replace=True) as store:
            pass
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
