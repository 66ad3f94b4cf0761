"""The growing samples x models correctness matrix of a lifelong benchmark, on disk: `BenchStore`.

A store is a directory:

    registry.sqlite      samples, models, estimated rows (threshold, best estimate and interval), sort versions,
                         meta (format version, n, m, chunking)
    correct.zarr/        uint8 [rows, bytes]: row i = model i, bit j = sample j correct (np.packbits, bit order big)
    observed.zarr/       same shape: bit set = the cell was evaluated (a fact); clear = predicted or never set
    sorts/v000001.npy    saved sample orders (int32 permutations of the samples present when saved)
    store.lock           fcntl.flock target serialising writers across processes
    WRITING              marker present while a writer holds the lock (left behind only by a killed writer)

Crash safety and concurrency (a crash here means the process dies, e.g. SIGKILL, at any instruction):

0. A store is created, or built from existing data (`BenchStore.building`), in a hidden temp directory beside its
   path and renamed into place when complete: a killed build leaves no store (only `.NAME.<hex>.partial`), and an
   empty store (no samples, no models) is a valid state.
1. The registry's committed n and m are the source of truth. The zarr arrays may be larger (a killed insert
   resized them); everything outside [0, m) x [0, n) is ignored by every read and never trusted.
2. Every write holds an exclusive flock on store.lock for its whole duration (registry insert + zarr resize + cell
   writes), so writers in different processes never interleave. Readers take no lock: they read n and m first,
   then only cells inside them, and the arrays are never smaller than n and m.
3. Structural changes run inside one SQLite transaction (BEGIN IMMEDIATE) that commits LAST: add_models inserts
   its registry rows, grows the arrays, writes the new rows' cells, then commits; a kill before COMMIT rolls the
   registry back, and the rows it wrote lie beyond m. add_samples only resizes (no cell data), then commits.
4. Rows beyond m may hold stale cells from a killed add_models; the next add_models overwrites (or zeroes) every
   row it makes visible. Bits beyond n are never set in any row (rows are written masked to n; cells only inside
   n), so new columns appear as zeros with no rewrite. The arrays only grow, so chunks beyond their shape never
   exist and read as zeros.
5. zarr writes each chunk file atomically (temp `*.partial` + rename), so a chunk is old or new, never torn; the
   rows of earlier inserts sharing a chunk survive. A killed writer can leave `*.partial` files, or a sort file
   written but not registered: the next lock holder sees the WRITING marker and deletes both (recovery).

Limits: write_rows and write_estimated_row are atomic per chunk, not per call (a kill mid-call can leave part of
the cells written, each either old or new; an estimated-row entry is committed only after all its cells). Chunk
files are not fsynced, so power loss (not process death) is not covered. One BenchStore instance per thread.

Memory: nothing loads the whole matrix. Reads and writes go through zarr about 64 MB of whole chunks per call
(`store_cells.READ_BYTES`); accuracies() and status() stream them. A row costs ceil(n/8) bytes (212 kB at n = 1.7M).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lifelong.sortsearch.best_estimates import Accuracy, estimated_accuracy
from lifelong.sortsearch.bitmatrix import packed_width
from lifelong.sortsearch.registry import EstimateRecord, ModelRecord, Registry, SortRecord
from lifelong.sortsearch.store_build import staged_store
from lifelong.sortsearch.store_cells import array_counts, read_packed, row_counts
from lifelong.sortsearch.store_cells import index_array as _index_array
from lifelong.sortsearch.store_files import (
    ARRAYS,
    LOCK_FILE,
    REGISTRY_FILE,
    SORTS_DIR,
    open_arrays,
    orphans,
    permutation_problem,
    sort_file_problems,
    write_lock,
    write_sort_file,
)
from lifelong.sortsearch.store_writes import StoreWrites

if TYPE_CHECKING:
    import zarr

__all__ = ["Accuracy", "BenchStore"]


class BenchStore(StoreWrites):
    """A directory holding the bit-packed correctness matrix, its observed mask and the registry (module docstring).

    Opening, locking and reading live here; every write (samples, models, cells, estimates) in `StoreWrites`."""

    def __init__(self, path: Path, *, lock_timeout: float = 600.0) -> None:
        """Open an existing store; prefer `BenchStore.open`."""
        self.path = path
        self.lock_timeout = lock_timeout
        self._registry = Registry(path / REGISTRY_FILE)
        self._lock_fd = os.open(path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        self._fill_in_intervals()

    # -- lifecycle ----------------------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike[str], *, chunk_models: int = 128, chunk_samples: int = 2**18) -> BenchStore:
        """Create an empty store (n = m = 0) at a new path; built in a temp directory and renamed into place."""
        with cls.building(path, chunk_models=chunk_models, chunk_samples=chunk_samples):
            pass
        return cls(Path(path))

    @classmethod
    @contextmanager
    def building(
        cls,
        path: str | os.PathLike[str],
        *,
        replace_empty: bool = False,
        replace: bool = False,
        chunk_models: int = 128,
        chunk_samples: int = 2**18,
        work: str | os.PathLike[str] | None = None,
        reuse_work: bool = False,
    ) -> Iterator[BenchStore]:
        """A new store, filled inside the `with` block, that appears at `path` only when the block ends normally.

        It is built in a hidden temp directory beside `path` (`.NAME.<hex>.partial`) and renamed into place; an error
        in the block deletes it, and a killed process leaves only that temp directory (never a store at `path`).
        `path` must not exist, be an empty directory, or (with `replace_empty`) hold an empty store (no samples, no
        models), or (with `replace`) hold any store; a store there is replaced when the new one is complete. The
        yielded store is closed at the end: open `path` to use it. `work`, `reuse_work`: build in that folder, and
        complete a store an interrupted build left there (see `store_build.staged_store`).
        """
        with staged_store(
            Path(path),
            replace_empty=replace_empty,
            replace=replace,
            chunk_models=chunk_models,
            chunk_samples=chunk_samples,
            work=None if work is None else Path(work),
            reuse_work=reuse_work,
        ) as staging:
            with cls(staging) as store:
                yield store

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, lock_timeout: float = 600.0) -> BenchStore:
        """Open an existing store; writers wait up to `lock_timeout` seconds for another process's write."""
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(
                f"no benchmark store at {path}: create it with `lifelong bench create {path}` "
                "(or `lifelong bench import`)"
            )
        return cls(path, lock_timeout=lock_timeout)

    def close(self) -> None:
        """Release the registry connection and the lock file descriptor."""
        self._registry.close()
        os.close(self._lock_fd)

    def __enter__(self) -> BenchStore:
        """Use as a context manager that closes the store."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store."""
        self.close()

    # -- locking and recovery -----------------------------------------------------------------------------------
    def _writing(self) -> AbstractContextManager[None]:
        """Hold the store's exclusive write lock; first clean up after a writer that was killed holding it."""
        return write_lock(self.path, self._lock_fd, self.lock_timeout, self._sort_files)

    def _sort_files(self) -> set[str]:
        """The file names of every registered sort."""
        return {record.file for record in self._registry.sorts()}

    def _orphans(self) -> list[Path]:
        """Temp files anywhere in the store, and sort files that no registered sort names."""
        return orphans(self.path, self._sort_files())

    # -- matrix access ------------------------------------------------------------------------------------------
    def _arrays(self) -> tuple[zarr.Array, zarr.Array]:
        """The correct and observed arrays, opened fresh (another process may have resized them)."""
        return open_arrays(self.path)

    def _chunks(self) -> tuple[int, int]:
        """Chunk shape of the arrays: (models, bytes)."""
        meta = self._registry.meta()
        return meta["chunk_models"], meta["chunk_samples"] // 8

    def _read(self, index: int, model_ids: np.ndarray, n: int) -> np.ndarray:
        """Packed rows [k, ceil(n/8)] of array `index` (0 correct, 1 observed), bits beyond n cleared."""
        return read_packed(self._arrays()[index], model_ids, n, self._chunks())

    # -- reads --------------------------------------------------------------------------------------------------
    def read_rows(self, model_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Packed correctness rows, uint8 [k, ceil(n/8)]: observed facts and predictions alike."""
        n, m = self._registry.counts()
        return self._read(0, _index_array(model_ids, m, "model"), n)

    def read_observed(self, model_ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Packed observed masks, uint8 [k, ceil(n/8)]: bit set = the cell was evaluated."""
        n, m = self._registry.counts()
        return self._read(1, _index_array(model_ids, m, "model"), n)

    def accuracies(self, model_ids: Sequence[int] | np.ndarray | None = None) -> dict[int, Accuracy]:
        """Accuracy over all n samples per model (the best estimate, see `Accuracy`), its kind and observed fraction.

        kind: 'observed' = every cell evaluated; 'estimated' = the row has an estimate (write_estimated_row,
        record_estimates), its unobserved cells are that estimate's predictions, and its accuracy the estimate's
        centre with its interval; 'mixed' = neither: unobserved cells are predictions from write_rows(observed=False),
        or never set (they count as 0; the observed fraction shows how many).

        An estimated row's estimate covers the n_samples of its sort; samples added since count with their cells:
        accuracy = (correct cells + estimate * n_samples - row_ones) / n, and the bounds shift with it.
        """
        n, m = self._registry.counts()
        if n == 0:
            raise ValueError("the store has no samples, so no accuracy is defined: add samples first")
        ids = np.arange(m) if model_ids is None else _index_array(model_ids, m, "model")
        ones, seen = row_counts(self._arrays(), ids, n, self._chunks())
        estimated = self._registry.estimates()
        result = {}
        for model, correct, observed in zip(ids.tolist(), ones.tolist(), seen.tolist(), strict=True):
            row = correct / n
            if observed == n:
                result[model] = Accuracy(row, "observed", 1.0, row, row, None, row)
            elif model in estimated:
                result[model] = estimated_accuracy(estimated[model], correct, observed, n)
            else:
                result[model] = Accuracy(row, "mixed", observed / n, row_accuracy=row)
        return result

    def sample_domains(self) -> list[str]:
        """Every sample's domain, in id order."""
        return self._registry.sample_domains()

    def sample_ids(self, *, source: str | None = None, domain: str | None = None) -> np.ndarray:
        """Ids (= column indices, int64) of all samples, or of those from one source and/or domain."""
        if source is None and domain is None:
            return np.arange(self._registry.counts()[0], dtype=np.int64)
        return self._registry.sample_ids_where(source=source, domain=domain)

    def sorts(self) -> list[SortRecord]:
        """Every saved sort version's record (version, file, samples and models it covered, ranking models)."""
        return self._registry.sorts()

    def estimates(self) -> dict[int, EstimateRecord]:
        """Every estimated row's record (threshold, n at estimation, sort version, method, budget), by model id."""
        return self._registry.estimates()

    def size(self) -> tuple[int, int]:
        """(samples n, models m) as committed in the registry: cheap, unlike `status()`."""
        return self._registry.counts()

    def model_ids(self) -> np.ndarray:
        """Ids (= row indices, int64) of all models."""
        return np.arange(self._registry.counts()[1], dtype=np.int64)

    def model_by_name(self, name: str) -> ModelRecord:
        """The model registered under `name` (id, name, metadata, created)."""
        return self._registry.model_by_name(name)

    def sample_hashes(self) -> list[str]:
        """The content hash of every sample, in id order (how an import recognises the samples it made)."""
        return self._registry.sample_hashes()

    def model_records(self) -> list[ModelRecord]:
        """Every model (id, name, metadata, created), by id."""
        return self._registry.model_records()

    # -- sorts --------------------------------------------------------------------------------------------------
    def save_sort(self, order: np.ndarray, ranking_models: Sequence[int] | np.ndarray) -> int:
        """Save a sample order (a permutation of all n samples) computed from `ranking_models`; returns its version."""
        order = np.asarray(order)
        with self._writing(), self._registry.transaction():
            n, m = self._registry.counts()
            problem = permutation_problem(order, n)
            if problem:
                raise ValueError(f"cannot save this sort: {problem}")
            models = _index_array(ranking_models, m, "model")
            version = self._registry.next_sort_version()
            target = self.path / SORTS_DIR / f"v{version:06d}.npy"
            write_sort_file(target, order, n)
            self._registry.put_sort(version, target.name, n, m, models.tolist())
        return version

    def load_sort(self, version: int) -> np.ndarray:
        """The sample order saved as `version`."""
        for record in self._registry.sorts():
            if record.version == version:
                return np.load(self.path / SORTS_DIR / record.file, allow_pickle=False)
        raise KeyError(f"no sort version {version} in the store: `lifelong bench status {self.path}` names the latest")

    def latest_sort(self) -> tuple[int, np.ndarray]:
        """(version, order) of the most recently saved sort."""
        records = self._registry.sorts()
        if not records:
            raise LookupError(
                f"store {self.path} has no saved sort yet: sort it first with `lifelong bench sort {self.path}`"
            )
        return records[-1].version, self.load_sort(records[-1].version)

    # -- summaries ----------------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """n, m, observed fraction of the whole matrix (streamed), number of estimated rows, latest sort version."""
        n, m = self._registry.counts()
        observed = int(array_counts(self._arrays()[1], np.arange(m), n, self._chunks()).sum()) if n and m else 0
        sorts = self._registry.sorts()
        return {
            "n": n,
            "m": m,
            "observed_fraction": observed / (n * m) if n and m else float("nan"),
            "estimated_rows": len(self._registry.estimates()),
            "latest_sort": sorts[-1].version if sorts else None,
        }

    def check(self) -> list[str]:
        """Integrity problems (empty = healthy): shapes vs n and m, registry, sort files, orphan files.

        Takes the write lock, so it first cleans up after a killed writer, as any write would.
        """
        with self._writing():
            problems = self._registry.check()
            meta = self._registry.meta()
            n, m = meta["n"], meta["m"]
            try:
                arrays = self._arrays()
            except (FileNotFoundError, ValueError) as error:
                return [*problems, f"matrix: cannot open the arrays ({error}): restore them from a backup"]
            for name, array in zip(ARRAYS, arrays, strict=True):
                rows, width = array.shape
                if array.dtype != np.uint8 or rows < m or width < packed_width(n):
                    problems.append(
                        f"matrix: {name} is {array.dtype} with {rows} rows x {width} bytes, but the registry needs "
                        f"uint8 with at least {m} rows x {packed_width(n)} bytes for {m} models x {n} samples"
                    )
                if array.chunks != self._chunks():
                    problems.append(f"matrix: {name} has chunks {array.chunks}, the registry says {self._chunks()}")
            problems += sort_file_problems(self.path, self._registry.sorts(), n, m)
            problems += [
                f"registry: estimated row of model {model} has no best estimate (written by an older version and not "
                "filled in: its sort file is missing or the store is read-only); re-add the model to get one"
                for model in self._registry.estimates_without_interval()
            ]
            problems += [f"orphan file {path}: left by an interrupted write; delete it" for path in self._orphans()]
        return problems
