"""The best estimate of an estimated row's accuracy, with its interval, as the store keeps and reports it.

Sort & Search predicts a new model's row from a step with threshold k over the ranked samples; its own estimate of
the accuracy is k/n. The n' evaluated samples also measure the step's mean error there, so the store reports the
model-assisted estimate k/n + mean residual with its interval (`intervals.accuracy_interval`, method
`intervals.STORE_METHOD` for the sampling the plan used) and keeps k/n beside it (`Accuracy.threshold_accuracy`).
`row_intervals` computes them from a row's cells when the estimate is recorded; `estimated_accuracy` carries them
to the store's current samples when the accuracy is read.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from lifelong.sortsearch.intervals import STORE_CONFIDENCE, STORE_METHOD, accuracy_interval
from lifelong.sortsearch.registry import EstimateInterval, EstimateRecord


class Accuracy(NamedTuple):
    """A model's accuracy over all n samples, what it rests on, and the fraction of its cells that were evaluated.

    `accuracy` is the best estimate: exact for an observed row; for an estimated row the interval's centre (the
    threshold's k/n corrected by the step's mean error on the evaluated samples, `intervals`), with `low`/`high` its
    95% interval (`intervals.STORE_CONFIDENCE`); for a mixed row the share of correct cells. `threshold_accuracy`:
    Sort & Search's own estimate (the DP threshold's k/n, what the paper reports); `row_accuracy`: the share of
    correct stored cells (facts and predictions). Bounds are None where no interval exists (mixed rows).
    """

    accuracy: float
    kind: Literal["observed", "estimated", "mixed"]
    observed_fraction: float
    low: float | None = None
    high: float | None = None
    threshold_accuracy: float | None = None
    row_accuracy: float | None = None


def row_intervals(
    correct: np.ndarray, seen: np.ndarray, order: np.ndarray, thresholds: np.ndarray, method: str
) -> list[EstimateInterval]:
    """Per row, the best estimate and interval over the n_e = len(order) samples of a sort, from its cells.

    `correct`, `seen`: dense 0/1 [rows, n_e] (sample order) of the stored cells and of the observed mask; the
    observed cells, ranked by `order`, are the sampled outcomes, and `thresholds` the step thresholds k. An
    estimate whose `method` ends in "uniform" was sampled evenly over the order, any other at random. A row with no
    observed cell gets k/n_e and no bounds.
    """
    n_e = order.size
    rank = np.empty(n_e, np.int64)
    rank[order] = np.arange(n_e)
    sampling = "uniform" if method.endswith("uniform") else "random"
    out = []
    for row, mask, k in zip(correct, seen.astype(bool), np.asarray(thresholds).tolist(), strict=True):
        row_ones = int(row.sum(dtype=np.int64))
        facts = np.flatnonzero(mask)
        if facts.size == 0 or not 0 <= k <= n_e:
            out.append(EstimateInterval(k / n_e, None, None, STORE_CONFIDENCE, "none", row_ones))
            continue
        facts = facts[np.argsort(rank[facts], kind="stable")]
        interval = accuracy_interval(
            row[facts][None, :],
            rank[facts],
            n_e,
            k=[k],
            confidence=STORE_CONFIDENCE,
            method=STORE_METHOD,
            sampling=sampling,
        )
        out.append(
            EstimateInterval(
                float(interval.estimate[0]),
                float(interval.low[0]),
                float(interval.high[0]),
                STORE_CONFIDENCE,
                f"{STORE_METHOD}-{sampling}",
                row_ones,
            )
        )
    return out


def estimated_accuracy(record: EstimateRecord, correct: int, observed: int, n: int) -> Accuracy:
    """An estimated row's Accuracy: its best estimate and interval over its sort's samples, carried to all n."""
    row = correct / n
    interval = record.interval
    if interval is None:  # a format-1 row not filled in yet: its cells, and k/n if nothing was added since
        threshold = record.threshold / n if record.n_samples == n else None
        return Accuracy(row, "estimated", observed / n, None, None, threshold, row)
    n_e = record.n_samples
    later = correct - interval.row_ones  # correct cells now, beyond what the estimate saw (new samples, facts)
    accuracy = min(1.0, max(0.0, (interval.estimate * n_e + later) / n))
    low = high = None
    if interval.low is not None and interval.high is not None:
        low = max(0.0, min(accuracy, (interval.low * n_e + later) / n))
        high = min(1.0, max(accuracy, (interval.high * n_e + later) / n))
    threshold = (record.threshold + later) / n
    return Accuracy(accuracy, "estimated", observed / n, low, high, threshold, row)
