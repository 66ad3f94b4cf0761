"""Metrics: per-evaluation errors and stream-level aggregates."""

from lifelong.metrics.analysis import (
    RunData,
    aggregate_seeds,
    forward_transfer,
    forward_transfer_details,
    pareto_front,
    read_run,
    records_of_type,
    regret_curve,
    slices,
    summarize_run,
    summarize_runs,
)
from lifelong.metrics.classification import (
    average_precision_details,
    error_rate,
    mean_average_precision,
    task_error,
)
from lifelong.metrics.matrix import (
    IID_METRICS,
    STREAMING_METRICS,
    AccuracyMatrix,
    clear_metrics,
    matrix_from_records,
    reported_metrics,
    summarize_matrix_seeds,
)

__all__ = [
    "average_precision_details",
    "error_rate",
    "mean_average_precision",
    "task_error",
    "RunData",
    "aggregate_seeds",
    "forward_transfer",
    "forward_transfer_details",
    "pareto_front",
    "read_run",
    "records_of_type",
    "regret_curve",
    "slices",
    "summarize_run",
    "summarize_runs",
    "IID_METRICS",
    "STREAMING_METRICS",
    "AccuracyMatrix",
    "clear_metrics",
    "matrix_from_records",
    "reported_metrics",
    "summarize_matrix_seeds",
]
