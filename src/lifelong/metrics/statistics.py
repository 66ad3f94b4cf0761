"""Small statistics shared by the metrics: mean and sample standard deviation over seeds, bootstrap intervals."""

from __future__ import annotations

import numpy as np


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof=1); None where there are too few values."""
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else None


def bootstrap_interval(
    per_unit: np.ndarray, *, resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `per_unit` values (e.g. each concept's accuracy on a level):
    the units are drawn with replacement `resamples` times (seeded) and the interval spans the middle
    `confidence` of the resampled means. It measures how much a level's top-1 depends on which concepts were drawn,
    which the seed spread of a fixed set of concepts does not show."""
    values = np.asarray(per_unit, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("bootstrap_interval needs at least one value")
    if not 0 < confidence < 1 or resamples < 1:
        raise ValueError(f"need 0 < confidence < 1 and resamples >= 1, got {confidence} and {resamples}")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 256):  # blocks keep the index array small for large unit counts
        stop = min(resamples, start + 256)
        means[start:stop] = values[rng.integers(0, values.size, (stop - start, values.size))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)
