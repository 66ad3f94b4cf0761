"""Metrics: per-evaluation errors and stream-level aggregates."""

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
]
