"""BenchStore across processes: concurrent writers lose nothing; a writer SIGKILLed mid-insert corrupts nothing."""

import inspect
import multiprocessing
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from lifelong.sortsearch.store import BenchStore

N_SAMPLES = 37


def _row(name: str, n: int) -> np.ndarray:
    """The deterministic dense 0/1 row a worker inserts for model `name` over n samples."""
    return np.random.default_rng(list(name.encode())).integers(0, 2, n, dtype=np.uint8)


def _insert_models(path: str, worker: int, count: int, barrier) -> None:
    """Worker: insert `count` models with rows, then flip one observed cell of each (shared chunks, both writers)."""
    with BenchStore.open(path) as store:
        barrier.wait()
        for i in range(count):
            name = f"w{worker}-{i}"
            (model,) = store.add_models(
                [name], [{"worker": worker}], rows=np.packbits(_row(name, N_SAMPLES)[None], axis=1)
            )
            flipped = 1 - _row(name, N_SAMPLES)[i]
            store.write_rows([model], [i], np.array([[flipped]]))


def test_two_processes_adding_models_lose_nothing(tmp_path, monkeypatch):
    # spawned children import this module by its importlib-mode name (tests.sortsearch...): put the repo root first
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    path = tmp_path / "store"
    with BenchStore.create(path, chunk_models=4, chunk_samples=16) as store:
        store.add_samples([dict(source="s", domain="d", label=0, content_hash=str(i)) for i in range(N_SAMPLES)])
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [context.Process(target=_insert_models, args=(str(path), w, 20, barrier)) for w in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    with BenchStore.open(path) as store:
        assert store.status()["m"] == 40 and store.check() == []
        for w in range(2):
            for i in range(20):
                record = store.model_by_name(f"w{w}-{i}")
                expected = _row(record.name, N_SAMPLES)
                expected[i] = 1 - expected[i]
                np.testing.assert_array_equal(np.unpackbits(store.read_rows([record.id]))[:N_SAMPLES], expected)
                assert record.metadata == {"worker": w}
        assert all(accuracy.kind == "observed" for accuracy in store.accuracies().values())


# The child inserts until killed: samples every 3rd step, a sort every 4th, a model with its row every step, and
# prints "id name n" only after each model's insert returned (committed).
CHILD = f"""
import sys
import numpy as np
from lifelong.sortsearch.store import BenchStore

{inspect.getsource(_row)}
store = BenchStore.open(sys.argv[1])
run = sys.argv[2]
n = len(store.sample_ids())
for i in range(10_000):
    if i % 3 == 0:
        records = [dict(source=run, domain="d", label=0, content_hash=f"{{run}}-{{i}}-{{j}}") for j in range(5)]
        n += len(store.add_samples(records))
    name = f"{{run}}-{{i}}"
    if i % 4 == 3:
        store.save_sort(np.arange(n)[::-1], [0])
    (model,) = store.add_models([name], rows=np.packbits(_row(name, n)[None], axis=1))
    print(model, name, n, flush=True)
"""


def test_sigkill_during_inserts_keeps_the_store_consistent(tmp_path):
    path = tmp_path / "store"
    with BenchStore.create(path, chunk_models=3, chunk_samples=16) as store:
        store.add_samples([dict(source="s", domain="d", label=0, content_hash=str(i)) for i in range(N_SAMPLES)])
        store.add_models(["seed"], rows=np.packbits(_row("seed", N_SAMPLES)[None], axis=1))
    committed = {"seed": (0, N_SAMPLES)}
    chance = random.Random(0)
    for run in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), f"r{run}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines = [child.stdout.readline() for _ in range(chance.randint(2, 8))]
        assert all(lines), f"child stopped early: {child.stderr.read()}"
        time.sleep(chance.uniform(0, 0.05))
        child.kill()
        child.wait(timeout=30)
        lines += child.stdout.read().splitlines(keepends=True)
        for line in lines:
            if line.endswith("\n"):  # a line is printed only after its insert committed
                model, name, n = line.split()
                committed[name] = (int(model), int(n))
        with BenchStore.open(path) as store:
            assert store.check() == []
            n = store.status()["n"]
            for name, (model, n_then) in committed.items():
                assert store.model_by_name(name).id == model
                expected = np.zeros(n, np.uint8)
                expected[:n_then] = _row(name, n_then)
                np.testing.assert_array_equal(np.unpackbits(store.read_rows([model]))[:n], expected)
                observed = np.unpackbits(store.read_observed([model]))[:n]
                assert observed[:n_then].all() and not observed[n_then:].any()
