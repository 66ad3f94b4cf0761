"""Every write to a benchmark store (`store.BenchStore`, layout and crash guarantees in `store.py`): samples and
models added, cells written as facts or predictions, estimated rows and their best estimates recorded, and the
best estimates a format-1 store lacks filled in on open. Each write holds the store's write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lifelong.sortsearch.best_estimates import stored_intervals
from lifelong.sortsearch.bitmatrix import packed_width
from lifelong.sortsearch.registry import EstimateInterval, EstimateRecord, Registry
from lifelong.sortsearch.store_cells import all_ones, packed_rows, write_cells
from lifelong.sortsearch.store_cells import index_array as _index_array
from lifelong.sortsearch.store_files import write_lock

if TYPE_CHECKING:
    import zarr

_BACKFILL_LOCK_TIMEOUT = 5.0  # seconds an open waits for the write lock to fill in a format-1 store's estimates


class StoreWrites:
    """The writing half of `BenchStore` (which provides the registry, the lock and the arrays it uses)."""

    path: Path
    _registry: Registry
    _lock_fd: int

    if TYPE_CHECKING:  # provided by BenchStore

        def _writing(self) -> AbstractContextManager[None]: ...

        def _sort_files(self) -> set[str]: ...

        def _arrays(self) -> tuple[zarr.Array, zarr.Array]: ...

        def _chunks(self) -> tuple[int, int]: ...

        def _read(self, index: int, model_ids: np.ndarray, n: int) -> np.ndarray: ...

        def load_sort(self, version: int) -> np.ndarray: ...

    # -- registry growth ----------------------------------------------------------------------------------------
    def add_samples(self, records: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append samples (dicts of source, domain, label, content_hash) as new columns, all cells unobserved 0."""
        with self._writing(), self._registry.transaction():
            ids = self._registry.insert_samples(records)
            n, _ = self._registry.counts()
            for array in self._arrays():
                rows, width = array.shape
                if packed_width(n) > width:
                    array.resize((rows, packed_width(n)))
        return ids

    def add_models(
        self,
        names: Sequence[str],
        metadata: Sequence[Mapping[str, Any]] | None = None,
        *,
        rows: np.ndarray | None = None,
        observed: bool | np.ndarray = True,
    ) -> list[int]:
        """Append models as new rows: all cells unobserved 0, or `rows` (packed [k, ceil(n/8)]) as facts/predictions,
        or with `observed` a packed mask of rows' shape: facts where it is set, predictions elsewhere.

        Registering a model together with its row is one atomic insert: after a kill, either both or neither exist.
        """
        names = list(names)
        metadata = [{} for _ in names] if metadata is None else list(metadata)
        if len(metadata) != len(names):
            raise ValueError(f"got {len(names)} model names but {len(metadata)} metadata entries: give one per model")
        with self._writing(), self._registry.transaction():
            n, m = self._registry.counts()
            if rows is not None:
                rows = packed_rows(rows, len(names), n, "rows")
            mask = None if isinstance(observed, bool | np.bool_) else packed_rows(observed, len(names), n, "observed")
            if mask is not None and rows is None:
                raise ValueError("an observed mask needs the rows it marks: pass rows too")
            ids = self._registry.insert_models(names, metadata)
            new_m = m + len(names)
            correct, observed_array = self._arrays()
            capacity = max(correct.shape[0], observed_array.shape[0])
            for array in (correct, observed_array):
                if new_m > array.shape[0]:
                    array.resize((new_m, max(array.shape[1], packed_width(n))))
            width = packed_width(n)
            if rows is not None and width:
                correct[m:new_m, :width] = rows
                if mask is not None:
                    observed_array[m:new_m, :width] = mask
                elif observed:
                    observed_array[m:new_m, :width] = np.broadcast_to(all_ones(1, n), rows.shape)
                elif capacity > m:  # rows a killed insert may have marked observed; rows beyond capacity read as 0
                    observed_array[m : min(capacity, new_m), :width] = 0
            elif capacity > m and width:  # rows a killed insert may have written: make them zero before exposing them
                stale = np.zeros((min(capacity, new_m) - m, width), dtype=np.uint8)
                correct[m : m + stale.shape[0], :width] = stale
                observed_array[m : m + stale.shape[0], :width] = stale
        return ids

    # -- cell writes --------------------------------------------------------------------------------------------
    def write_rows(
        self,
        model_ids: Sequence[int] | np.ndarray,
        sample_ids: Sequence[int] | np.ndarray,
        values: np.ndarray,
        *,
        observed: bool = True,
    ) -> None:
        """Set cells model_ids x sample_ids to `values` (0/1, shape [models, samples]) as facts or predictions.

        A prediction (observed=False) never overwrites an observed cell: facts win.
        """
        with self._writing():
            n, m = self._registry.counts()
            rows = _index_array(model_ids, m, "model")
            cols = _index_array(sample_ids, n, "sample")
            values = np.asarray(values)
            if values.shape != (rows.size, cols.size) or not np.isin(values, (0, 1)).all():
                raise ValueError(
                    f"values must be 0/1 of shape ({rows.size}, {cols.size}) = (models, samples), "
                    f"got {values.dtype} with shape {values.shape}"
                )
            write_cells(self._arrays(), rows, cols, values.astype(bool), n=n, chunks=self._chunks(), observed=observed)

    def write_estimated_row(
        self, model_id: int, packed_row: np.ndarray, threshold: int, sort_version: int, method: str, budget: int
    ) -> None:
        """Store a model's predicted row (packed [ceil(n/8)]); observed cells keep their values; record the estimate."""
        with self._writing(), self._registry.transaction():
            n, m = self._registry.counts()
            row_id = _index_array([model_id], m, "model")
            predicted = packed_rows(np.asarray(packed_row).reshape(1, -1), 1, n, "packed_row")
            self._check_sort_version(sort_version)
            if not 0 <= threshold <= n or not 0 <= budget <= n or not method:
                raise ValueError(
                    f"threshold {threshold} and budget {budget} must lie in 0..n = {n}, and method ({method!r}) "
                    "must name the estimator"
                )
            old, seen = self._read(0, row_id, n), self._read(1, row_id, n)
            if predicted.shape[1]:
                self._arrays()[0][model_id : model_id + 1, : predicted.shape[1]] = (seen & old) | (~seen & predicted)
            intervals = self._estimate_intervals(row_id, [threshold], sort_version, method)
            self._registry.put_estimates([model_id], [threshold], n, sort_version, method, budget, intervals)

    def record_estimates(
        self,
        model_ids: Sequence[int] | np.ndarray,
        thresholds: Sequence[int] | np.ndarray,
        sort_version: int,
        method: str,
        budget: int,
        intervals: Sequence[EstimateInterval] | None = None,
    ) -> None:
        """Register estimates for rows whose predicted cells are already stored (e.g. given to `add_models` with
        observed=False): one transaction for any number of models, so inserting many models stays fast. Each row's
        best estimate and interval are computed from its observed cells, in the order of `sort_version`, unless an
        estimator gives them (`intervals`, one per model)."""
        thresholds = np.asarray(thresholds, dtype=np.int64)
        with self._writing(), self._registry.transaction():
            n, m = self._registry.counts()
            ids = _index_array(model_ids, m, "model")
            if thresholds.shape != ids.shape:
                raise ValueError(f"{ids.size} models but {thresholds.size} thresholds: give one threshold per model")
            self._check_sort_version(sort_version)
            if ids.size and (thresholds.min() < 0 or thresholds.max() > n) or not 0 <= budget <= n or not method:
                raise ValueError(
                    f"thresholds and budget {budget} must lie in 0..n = {n}, and method ({method!r}) must name the "
                    "estimator"
                )
            if intervals is None:
                intervals = self._estimate_intervals(ids, thresholds, sort_version, method)
            elif len(intervals) != ids.size:
                raise ValueError(f"{ids.size} models but {len(intervals)} estimates: give one per model")
            self._registry.put_estimates(ids.tolist(), thresholds.tolist(), n, sort_version, method, budget, intervals)

    # -- best estimates -----------------------------------------------------------------------------------------
    def _check_sort_version(self, version: int) -> None:
        """Raise ValueError unless sort `version` exists."""
        if version not in {record.version for record in self._registry.sorts()}:
            raise ValueError(f"sort version {version} does not exist: sort the store first (`lifelong bench sort`)")

    def _estimate_intervals(
        self, model_ids: np.ndarray, thresholds: Sequence[int] | np.ndarray, sort_version: int, method: str
    ) -> list[EstimateInterval | None]:
        """Each row's best estimate and interval from its observed cells, ranked by `sort_version`, with threshold k
        (`best_estimates.stored_intervals`), reading a few MB of rows at a time; None for every row where the sort
        covers more samples than the store holds."""
        order = self.load_sort(sort_version)
        n, _ = self._registry.counts()
        if order.size == 0 or order.size > n:
            return [None] * len(model_ids)
        ids = np.asarray(model_ids, np.int64)
        return list(stored_intervals(self._arrays(), ids, n, self._chunks(), order, thresholds, method))

    def _fill_in_intervals(self) -> None:
        """Give estimated rows without a best estimate (written by format 1) theirs, once; best effort on open.

        Waits at most a few seconds for the write lock; a store that cannot be written (or whose sort file is gone)
        keeps them missing: `accuracies` then reports those rows' cells, and `check` names them.
        """
        missing = self._registry.estimates_without_interval()
        if not missing:
            return
        try:
            with write_lock(self.path, self._lock_fd, _BACKFILL_LOCK_TIMEOUT, self._sort_files):
                with self._registry.transaction():
                    groups: dict[tuple[int, str], list[EstimateRecord]] = {}
                    for record in self._registry.estimates().values():
                        if record.interval is None:
                            groups.setdefault((record.sort_version, record.method), []).append(record)
                    filled = {}
                    for (version, method), group in groups.items():
                        size = self.load_sort(version).size
                        group = [r for r in group if r.n_samples == size]
                        ids = np.array([r.model_id for r in group], np.int64)
                        intervals = self._estimate_intervals(ids, [r.threshold for r in group], version, method)
                        for record, interval in zip(group, intervals, strict=True):
                            if interval is not None:
                                filled[record.model_id] = interval
                    self._registry.put_intervals(filled)
        except (OSError, ValueError, KeyError, TimeoutError, sqlite3.Error):
            return
