"""CLEAR's accuracy matrix and its metrics: plain averages of regions of R
(docs/protocols/clear.md#accuracy-matrix-and-metrics).

R[i, j] is the accuracy on bucket j's evaluation data of the model after training bucket i (rows and columns
0-based stream positions). In-domain averages the diagonal, next-domain the first superdiagonal, Acc the lower
triangle with the diagonal, BwT the strictly lower and FwT the strictly upper triangle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from lifelong.metrics.statistics import mean_std

IID_METRICS = ("in_domain", "next_domain", "acc", "bwt", "fwt")
STREAMING_METRICS = ("next_domain", "fwt")  # streaming: the diagonal is training accuracy, no held-out past data
PROTOCOLS = {"iid": IID_METRICS, "streaming": STREAMING_METRICS}


def reported_metrics(protocol: str) -> tuple[str, ...]:
    """The metrics a protocol reports: all five under 'iid', only next-domain and FwT under 'streaming'."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {sorted(PROTOCOLS)}")
    return PROTOCOLS[protocol]


def _cell_listing(cells: np.ndarray, values: np.ndarray, limit: int = 5) -> str:
    """'(i, j) = v' for the first `limit` of the given cell indices, for error messages."""
    shown = [f"({int(i)}, {int(j)}) = {float(values[i, j])!r}" for i, j in cells[:limit]]
    more = f" and {len(cells) - limit} more" if len(cells) > limit else ""
    return ", ".join(shown) + more


def _validated(R: Any) -> np.ndarray:
    """R as a float array after checking it is a square N x N (N >= 2) matrix of finite accuracies in [0, 1]."""
    try:
        matrix = np.array(R, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"accuracy matrix must be a numeric N x N array (lists of numbers), got {R!r}") from exc
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"accuracy matrix must be square (N x N), got shape {matrix.shape}")
    if matrix.shape[0] < 2:
        raise ValueError(
            f"accuracy matrix needs N >= 2 buckets (next-domain, BwT and FwT need two), got N = {len(matrix)}"
        )
    bad = np.argwhere(~np.isfinite(matrix))
    if bad.size:
        raise ValueError(
            f"accuracy matrix cell(s) (row i, column j) {_cell_listing(bad, matrix)} not finite; every cell needs "
            "an accuracy: evaluate every bucket after each training before computing the metrics"
        )
    bad = np.argwhere((matrix < 0.0) | (matrix > 1.0))
    if bad.size:
        raise ValueError(
            f"accuracy matrix cell(s) (row i, column j) {_cell_listing(bad, matrix)} outside [0, 1]; the matrix "
            "holds accuracies in [0, 1], not percentages (divide by 100) or errors (use 1 - error)"
        )
    return matrix


def clear_metrics(R: Any) -> dict[str, float]:
    """In-domain, next-domain, Acc, BwT and FwT of an N x N accuracy matrix (rows: after training bucket i).

    All five are plain means of regions of R, as CLEAR defines them (not GEM-style differences), so
    Acc = (N in_domain + N(N-1)/2 bwt) / (N(N+1)/2). R must be finite accuracies in [0, 1], else a ValueError
    names the offending cells.
    """
    matrix = _validated(R)
    n = len(matrix)
    rows, columns = np.indices((n, n))
    return {
        "in_domain": float(matrix[rows == columns].mean()),
        "next_domain": float(matrix[columns == rows + 1].mean()),
        "acc": float(matrix[columns <= rows].mean()),
        "bwt": float(matrix[columns < rows].mean()),
        "fwt": float(matrix[columns > rows].mean()),
    }


def gem_bwt(R: Any) -> float:
    """GEM's backward transfer (Lopez-Paz & Ranzato 2017; Avalanche's `bwt`): the mean over buckets j < N - 1 of
    R[N-1, j] - R[j, j], how accuracy on each earlier bucket changed from just after training it to the end
    (negative: forgetting). CLEAR's BwT (`clear_metrics`) is instead the plain mean of the strictly lower triangle.
    """
    matrix = _validated(R)
    last = len(matrix) - 1
    return float(np.mean(matrix[last, :last] - np.diag(matrix)[:last]))


# ----------------------------------------------------------------------------------------- from event records


@dataclass(frozen=True)
class _Cell:
    row: int
    column: int
    accuracy: float
    event: Any


def _check_index(record: Mapping[str, Any], key: str, num_tasks: int) -> int:
    """The record's `key` as a stream position in 0..num_tasks-1."""
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < num_tasks:
        raise ValueError(
            f"predict record of event {record.get('event')} has {key} = {value!r}, expected a stream position in "
            f"0..{num_tasks - 1} (the accuracy matrix was set up for num_tasks = {num_tasks}); "
            "pass the stream's number of tasks"
        )
    return int(value)


def _record_cell(record: Mapping[str, Any], num_tasks: int) -> _Cell | None:
    """The matrix cell a record fills: predict records made after some training; None for every other record."""
    if record.get("type") != "predict" or record.get("after_task_index") is None:
        return None
    row = _check_index(record, "after_task_index", num_tasks)
    column = _check_index(record, "task_index", num_tasks)
    error = record.get("error")
    if error is None or isinstance(error, bool) or not math.isfinite(float(error)):
        raise ValueError(
            f"predict record of event {record.get('event')} (cell ({row}, {column})) has error {error!r}, "
            "expected a finite error (1 - accuracy)"
        )
    return _Cell(row, column, 1.0 - float(error), record.get("event"))


def _cells_with(cells: Sequence[_Cell], cell: _Cell) -> tuple[_Cell, ...]:
    """`cells` plus `cell`; a cell filled twice is an error naming both events."""
    for other in cells:
        if other.row == cell.row and other.column == cell.column:
            raise ValueError(
                f"accuracy matrix cell ({cell.row}, {cell.column}) is filled twice, by events {other.event} and "
                f"{cell.event}: bucket {cell.column} was evaluated twice after training bucket {cell.row} "
                "(records of two runs mixed?); pass one run's records"
            )
    return (*cells, cell)


def _matrix_of(cells: Iterable[_Cell], num_tasks: int) -> np.ndarray:
    matrix = np.full((num_tasks, num_tasks), np.nan)
    for cell in cells:
        matrix[cell.row, cell.column] = cell.accuracy
    return matrix


def _check_num_tasks(num_tasks: Any) -> int:
    if isinstance(num_tasks, bool) or not isinstance(num_tasks, int | np.integer) or num_tasks < 2:
        raise ValueError(f"num_tasks must be an integer >= 2 (the stream's number of buckets), got {num_tasks!r}")
    return int(num_tasks)


def matrix_from_records(records: Iterable[Mapping[str, Any]], num_tasks: int) -> np.ndarray:
    """The N x N accuracy matrix (1 - error) of a run's predict records, NaN where no record filled a cell.

    Row i is the record's after_task_index, column j its task_index; records before any training
    (after_task_index None) and non-predict records are ignored; a cell filled twice is a ValueError.
    """
    num_tasks = _check_num_tasks(num_tasks)
    cells: tuple[_Cell, ...] = ()
    for record in records:
        cell = _record_cell(record, num_tasks)
        if cell is not None:
            cells = _cells_with(cells, cell)
    return _matrix_of(cells, num_tasks)


@dataclass(frozen=True)
class _MatrixState:
    cells: tuple[_Cell, ...] = ()  # filled cells in record order


class AccuracyMatrix:
    """Metric over a run's records: the accuracy matrix R and the protocol's CLEAR metrics once R is complete.

    `num_tasks` is the stream's number of buckets; `protocol` ('iid' or 'streaming') picks the reported metrics;
    `labels` (one per bucket, e.g. time windows) name rows and columns in reports.
    """

    name = "accuracy_matrix"

    def __init__(self, num_tasks: int, protocol: str = "iid", labels: Sequence[str] | None = None) -> None:
        self.num_tasks = _check_num_tasks(num_tasks)
        self.protocol = protocol
        self.reported = reported_metrics(protocol)
        if labels is not None and len(labels) != self.num_tasks:
            raise ValueError(f"labels must name each of the {self.num_tasks} buckets, got {len(labels)}: {labels!r}")
        self.labels = None if labels is None else tuple(str(label) for label in labels)

    def init(self) -> _MatrixState:
        return _MatrixState()

    def add(self, state: _MatrixState, record: dict) -> _MatrixState:
        cell = _record_cell(record, self.num_tasks)
        if cell is None:
            return state
        return replace(state, cells=_cells_with(state.cells, cell))

    def compute(self, state: _MatrixState) -> dict:
        matrix = _matrix_of(state.cells, self.num_tasks)
        complete = bool(np.isfinite(matrix).all())
        metrics = clear_metrics(matrix) if complete else {}
        out = {
            "accuracy_matrix": [[None if math.isnan(v) else float(v) for v in row] for row in matrix],
            "matrix_protocol": self.protocol,
            "matrix_complete": complete,
            "clear_metrics": {name: metrics[name] for name in self.reported} if complete else {},
        }
        if self.labels is not None:
            out["matrix_labels"] = list(self.labels)
        return out


def accuracy_matrix(stream) -> AccuracyMatrix | None:
    """The accuracy matrix R[i, j] and CLEAR metrics, for streams that evaluate every task after each training event."""
    if getattr(stream, "evaluation", "own") != "all":
        return None
    return AccuracyMatrix(len(stream.tasks), protocol=stream.protocol or "iid")


# ---------------------------------------------------------------------------------------------------- seeds


def _seed_metrics(index: int, item: Mapping[str, Any]) -> dict[str, float]:
    """The metrics of one seed: an AccuracyMatrix output's 'clear_metrics', or a clear_metrics dict itself."""
    metrics = item["clear_metrics"] if "clear_metrics" in item else {k: v for k, v in item.items() if k in IID_METRICS}
    if not metrics:
        raise ValueError(
            f"seed {index} has no CLEAR metrics (its accuracy matrix is incomplete?); pass finished runs only"
        )
    return {name: float(value) for name, value in metrics.items()}


def _mean_matrix(matrices: list[Any]) -> list[list[float | None]]:
    """Elementwise mean over seeds; a cell missing (None/NaN) in any seed is None."""
    arrays = [np.array(m, dtype=float) for m in matrices]
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"seeds' accuracy matrices differ in shape: {sorted(shapes)}; summarize one stream's runs")
    mean = np.mean(arrays, axis=0)
    return [[None if math.isnan(v) else float(v) for v in row] for row in mean]


def summarize_matrix_seeds(per_seed: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """{"metrics": {name: {"mean", "std", "n", "values"}}, "mean_matrix", "num_seeds"} over seeds (std: ddof=1).

    Each item is an AccuracyMatrix output (with 'clear_metrics' and 'accuracy_matrix') or a clear_metrics dict.
    All seeds must report the same metrics; std is None with one seed. 'mean_matrix' is the elementwise mean of
    the seeds' matrices, None in cells a seed lacks; None when an item has no matrix.
    """
    if not per_seed:
        raise ValueError("no seeds to summarize; pass one AccuracyMatrix output (or clear_metrics dict) per seed")
    metrics = [_seed_metrics(i, item) for i, item in enumerate(per_seed)]
    names = set(metrics[0])
    for i, seed in enumerate(metrics[1:], start=1):
        if set(seed) != names:
            raise ValueError(
                f"seed {i} reports metrics {sorted(seed)} but seed 0 reports {sorted(names)}; "
                "summarize runs of one protocol"
            )
    stats: dict[str, dict[str, Any]] = {}
    for name in [n for n in IID_METRICS if n in names]:
        values = [seed[name] for seed in metrics]
        mean, std = mean_std(values)
        stats[name] = {"mean": mean, "std": std, "n": len(values), "values": values}
    matrices = [item.get("accuracy_matrix") for item in per_seed]
    mean_matrix = None if any(m is None for m in matrices) else _mean_matrix(matrices)
    return {"metrics": stats, "mean_matrix": mean_matrix, "num_seeds": len(per_seed)}
