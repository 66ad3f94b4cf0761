"""The benchmark store's workflows from Python: `lifelong bench create|import|sort|status|check`.

One spec per command (fields named as its options) and a function that does the work and returns what it did; the
errors are the toolkit's (`lifelong.core.errors`) with the messages the command prints. Nothing here prints:
`bench_console` renders each result as the command shows it. New models: `bench_models`; new samples:
`bench_samples`; experiments and the zoo: `bench_experiments`; estimators: `bench_compare`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lifelong.commands.bench_inputs import _csv_rows, _held_store, _one_of, _open, toolkit_errors
from lifelong.commands.outputs import interrupted, work_folder
from lifelong.core.errors import Interrupted, ResumeRefused
from lifelong.core.progress import Progress, ProgressUpdate, progress_bar

if TYPE_CHECKING:
    import pandas as pd

_ROWS_PER_INSERT = 256  # models an import adds (or compares) per atomic insert


# -- create --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchCreateSpec:
    """`lifelong bench create STORE`: an empty store; `resume` keeps a store already there, `overwrite` replaces it."""

    store: str | Path
    resume: bool = False
    overwrite: bool = False


@dataclass(frozen=True)
class BenchCreateResult:
    """The store at `store`: created empty, or (`kept`, with `resume`) one already there with its models and samples."""

    store: Path
    kept: bool = False
    models: int = 0
    samples: int = 0


def bench_create(spec: BenchCreateSpec) -> BenchCreateResult:
    """Create an empty store (built beside STORE and renamed into place), or keep / replace the one there."""
    from lifelong.sortsearch.store import BenchStore

    store = Path(spec.store)
    _one_of(spec.resume, spec.overwrite)
    with toolkit_errors():
        held = _held_store(store)
        if held is not None and spec.resume:
            return BenchCreateResult(store, kept=True, models=held[0], samples=held[1])
        if held is not None and not spec.overwrite:
            raise ResumeRefused(
                f"{store} already holds a store with {held[0]} models x {held[1]} samples: pass --resume to keep "
                "it, --overwrite to replace it by an empty store, or pick a new path"
            )
        with BenchStore.building(store, replace_empty=True, replace=spec.overwrite):
            pass
    return BenchCreateResult(store)


# -- import --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchImportSpec:
    """`lifelong bench import STORE --matrix FILE --samples FILE [--models FILE]`: a store from a fully observed
    matrix (a dense 0/1 .npy, rows = models) and its samples CSV; `models` names the rows (default model-0, ...).
    `resume` continues an interrupted import (STORE.work) or adds to the store it made the models it lacks;
    `overwrite` replaces a store at STORE."""

    store: str | Path
    matrix: str | Path
    samples: str | Path
    models: str | Path | None = None
    resume: bool = False
    overwrite: bool = False


@dataclass(frozen=True)
class BenchImportResult:
    """The store after the import (`models` x `samples`, `added` of them by this call). `grown`: `resume` found the
    complete store an earlier import made and added the models it lacked; then `sort_outdated` says its sort predates
    them, and `stale_work` names a work folder left beside it (delete it)."""

    store: Path
    models: int
    samples: int
    added: int
    grown: bool = False
    sort_outdated: bool = False
    stale_work: Path | None = None


def bench_import(spec: BenchImportSpec, *, progress: Progress = False) -> BenchImportResult:
    """Import the matrix into a new store, built in STORE.work and renamed into place at the end (an interrupted
    import leaves no store; the same spec with `resume=True` continues it). `progress` advances per model added."""
    import shutil

    from lifelong.sortsearch.experiment import load_matrix
    from lifelong.sortsearch.samples_csv import read_samples_csv, store_records
    from lifelong.sortsearch.store import BenchStore

    store, resume, overwrite = Path(spec.store), spec.resume, spec.overwrite
    _one_of(resume, overwrite)
    work = work_folder(store)
    with toolkit_errors():
        dense = load_matrix(spec.matrix)
        records = store_records(read_samples_csv(spec.samples, n=dense.shape[1]))
        names = _import_names(spec.models, dense.shape[0], spec.matrix)
        held = _held_store(store)
        if held is not None and resume:
            stale = work if work.exists() else None
            try:
                return _grow(store, dense, records, names, spec.samples, progress, stale)
            except KeyboardInterrupt:
                raise Interrupted("Imported models are kept: add --resume to continue.") from None
        if held is not None and not overwrite:
            raise ResumeRefused(
                f"{store} already holds a store with {held[0]} models x {held[1]} samples: pass --resume to add the "
                "models it lacks, --overwrite to replace it, or pick a new path"
            )
        if work.exists() and not (resume or overwrite):
            raise ResumeRefused(
                f"{work} holds an interrupted import; pass --resume to continue it, --overwrite to start over, or "
                "pick a new path"
            )
        if overwrite and work.is_dir():
            shutil.rmtree(work)
        try:
            with BenchStore.building(store, replace_empty=True, replace=overwrite, work=work, reuse_work=resume) as b:
                with progress_bar(progress, dense.shape[0], description="import") as advance:
                    added = _fill(b, work, dense, records, names, spec.samples, advance)
        except KeyboardInterrupt:
            raise interrupted(store, "Imported models") from None
    return BenchImportResult(store, int(dense.shape[0]), int(dense.shape[1]), added)


def _import_names(models: str | Path | None, count: int, matrix: str | Path) -> list[str]:
    """The model names of an import: the `name` column of `models`, or model-0, model-1, ..."""
    if models is None:
        return [f"model-{i}" for i in range(count)]
    rows = _csv_rows(Path(models), ("name",), "a models CSV needs a `name` column, one row per matrix row")
    names = [row["name"] for row in rows]
    if len(names) != count:
        raise ValueError(f"{models} lists {len(names)} models but {matrix} has {count} rows (models)")
    return names


def _fill(
    bench: Any,
    where: Path,
    dense: np.ndarray,
    records: list[dict],
    names: list[str],
    samples: str | Path,
    advance: ProgressUpdate,
) -> int:
    """Bring `bench` (at `where`) to hold this import: its samples (added when it has none) and every model of `names`
    it lacks; refuse a store of other samples, or a model of the same name with another row. Returns models added."""
    hashes = bench.sample_hashes()
    wanted = [record["content_hash"] for record in records]
    if not hashes:
        bench.add_samples(records)
    elif hashes != wanted:
        first = next((j for j, (a, b) in enumerate(zip(hashes, wanted, strict=False)) if a != b), len(hashes))
        raise ValueError(
            f"{where} holds other samples than {samples} ({len(hashes)} vs {len(wanted)} samples, first difference "
            f"at sample {first}): --resume continues the import that made it; --overwrite imports anew"
        )
    known = {record.name: record.id for record in bench.model_records()}
    present = [i for i, name in enumerate(names) if name in known]
    for i0 in range(0, len(present), _ROWS_PER_INSERT):
        part = present[i0 : i0 + _ROWS_PER_INSERT]
        stored = bench.read_rows([known[names[i]] for i in part])
        differs = np.flatnonzero((stored != np.packbits(np.asarray(dense[part]), axis=1)).any(axis=1))
        if differs.size:
            raise ValueError(
                f"model {names[part[int(differs[0])]]!r} is in {where} with another row than in the matrix: --resume "
                "continues the import that made it; --overwrite imports anew"
            )
    advance(len(present))
    todo = [i for i, name in enumerate(names) if name not in known]
    for i0 in range(0, len(todo), _ROWS_PER_INSERT):
        part = todo[i0 : i0 + _ROWS_PER_INSERT]
        bench.add_models([names[i] for i in part], rows=np.packbits(np.asarray(dense[part]), axis=1))
        advance(len(part))
    return len(todo)


def _grow(
    store: Path,
    dense: np.ndarray,
    records: list[dict],
    names: list[str],
    samples: str | Path,
    progress: Progress,
    stale: Path | None,
) -> BenchImportResult:
    """Add to the store an import made the models of `names` it lacks (each insert is atomic: no work folder)."""
    with _open(store) as bench, progress_bar(progress, dense.shape[0], description="import") as advance:
        added = _fill(bench, store, dense, records, names, samples, advance)
        n, m = bench.size()
        outdated = bool(added and bench.sorts())
    return BenchImportResult(store, m, n, added, grown=True, sort_outdated=outdated, stale_work=stale)


# -- sort ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchSortSpec:
    """`lifelong bench sort STORE`: rank the samples easiest first by the fully observed models."""

    store: str | Path


@dataclass(frozen=True)
class BenchSortResult:
    """The new sort version, the samples it ranks and the fully observed models that ranked them."""

    version: int
    samples: int
    ranking_models: list[int]


def bench_sort(spec: BenchSortSpec) -> BenchSortResult:
    """Save a new sort version of the store's samples."""
    from lifelong.sortsearch.insert import sort_store

    with toolkit_errors(), _open(Path(spec.store)) as bench:
        version = sort_store(bench)
        record = bench.sorts()[-1]
    return BenchSortResult(version, record.n_samples, list(record.ranking_models))


# -- status, check -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchStatusSpec:
    """`lifelong bench status STORE`: the store's sizes, observed fraction and leaderboard."""

    store: str | Path


LEADERBOARD_COLUMNS = (
    "id",
    "name",
    "accuracy",
    "low",
    "high",
    "threshold_accuracy",
    "row_accuracy",
    "kind",
    "observed_fraction",
)


@dataclass(frozen=True)
class BenchStatusResult:
    """A store's state: `n` samples, `m` models, the observed fraction of its cells (NaN when empty), estimated rows,
    the latest sort version; and the leaderboard, best first: per model its id, name, accuracy (the best estimate),
    interval `low`-`high` at `confidence` (NaN where none), Sort & Search's own `threshold_accuracy`, the stored row's
    `row_accuracy`, `kind` (observed / estimated / mixed) and `observed_fraction` (empty without samples or models)."""

    store: Path
    n: int
    m: int
    observed_fraction: float
    estimated_rows: int
    latest_sort: int | None
    confidence: float
    leaderboard: pd.DataFrame = field(repr=False)

    def info(self) -> dict[str, Any]:
        """The state as `bench status --json` prints it, without the leaderboard."""
        keys = ("n", "m", "observed_fraction", "estimated_rows", "latest_sort")
        return {key: getattr(self, key) for key in keys}


def bench_status(spec: BenchStatusSpec) -> BenchStatusResult:
    """Read the store's state and rank its models by accuracy (ties by id)."""
    import pandas as pd

    from lifelong.sortsearch.intervals import STORE_CONFIDENCE

    store = Path(spec.store)
    with toolkit_errors(), _open(store) as bench:
        info = bench.status()
        rows: list[tuple] = []
        if info["n"] and info["m"]:
            names = {r.id: r.name for r in bench.model_records()}
            board = sorted(bench.accuracies().items(), key=lambda item: (-item[1].accuracy, item[0]))
            rows = [
                (
                    i,
                    names.get(i),
                    a.accuracy,
                    a.low,
                    a.high,
                    a.threshold_accuracy,
                    a.row_accuracy,
                    a.kind,
                    a.observed_fraction,
                )
                for i, a in board
            ]
    frame = pd.DataFrame.from_records(rows, columns=list(LEADERBOARD_COLUMNS))
    return BenchStatusResult(store, confidence=STORE_CONFIDENCE, leaderboard=frame, **info)


@dataclass(frozen=True)
class BenchCheckSpec:
    """`lifelong bench check STORE`: an integrity check of the store."""

    store: str | Path


@dataclass(frozen=True)
class BenchCheckResult:
    """The problems found (none: `ok`); the store's size when healthy (the command exits 1 on problems)."""

    store: Path
    problems: list[str]
    n: int | None = None
    m: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the check found no problem."""
        return not self.problems


def bench_check(spec: BenchCheckSpec) -> BenchCheckResult:
    """Check the store (taking its write lock, so it first cleans up after a killed writer)."""
    store = Path(spec.store)
    with toolkit_errors(), _open(store) as bench:
        problems = bench.check()
        if problems:
            return BenchCheckResult(store, problems)
        n, m = bench.size()
    return BenchCheckResult(store, [], n, m)
