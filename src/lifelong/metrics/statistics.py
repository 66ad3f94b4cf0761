"""Small statistics shared by the metrics: mean and sample standard deviation over seeds."""

from __future__ import annotations

import numpy as np


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (ddof=1); None where there are too few values."""
    if not values:
        return None, None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else None
