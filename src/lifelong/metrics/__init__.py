"""Metrics: per-evaluation errors and stream-level aggregates."""

from lifelong.metrics.accuracy_matrix import (
    IID_METRICS,
    STREAMING_METRICS,
    AccuracyMatrix,
    clear_metrics,
    gem_bwt,
    matrix_from_records,
    reported_metrics,
    summarize_matrix_seeds,
)
from lifelong.metrics.analysis import (
    aggregate_seeds,
    forward_transfer,
    forward_transfer_details,
    pareto_front,
    records_of_type,
    regret_curve,
    slices,
)
from lifelong.metrics.classification import (
    average_precision_details,
    error_rate,
    mean_average_precision,
    task_error,
)

__all__ = [
    "average_precision_details",
    "error_rate",
    "mean_average_precision",
    "task_error",
    "aggregate_seeds",
    "forward_transfer",
    "forward_transfer_details",
    "pareto_front",
    "records_of_type",
    "regret_curve",
    "slices",
    "IID_METRICS",
    "STREAMING_METRICS",
    "AccuracyMatrix",
    "clear_metrics",
    "gem_bwt",
    "matrix_from_records",
    "reported_metrics",
    "summarize_matrix_seeds",
]
