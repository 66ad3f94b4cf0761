"""Confidence intervals on the accuracies Sort & Search estimates (`accuracy_interval`) and their measured coverage.

The paper's estimate of a model's accuracy is k/n, k the extrapolated DP threshold. Its error is
|a|/n - k/n = (1/n) sum_j r_j with residuals r_j = a_j - y_j in {-1, 0, 1} of the step prediction y. The n'
evaluated samples observe r_j exactly, so the step is a model-assisted ("difference") estimator of survey sampling:
accuracy = k/n + mean(r over the n' sampled items), with the standard error of a mean of n' draws out of n,
sqrt((1 - n'/n) s_r^2 / n'), and a normal quantile. The residuals concentrate near the threshold, so s_r^2 is much
smaller than the binomial p(1 - p) of the outcomes themselves: intervals are narrow where the step fits. `method`:
"difference" (s_r^2 = the sample variance, with one +1 and one -1 pseudo-residual added so that a perfect fit on
the sample never gives a zero-width interval), "systematic" (the successive-difference variance of systematic
sampling, sum (r_{j+1} - r_j)^2 / (2 (n' - 1)), with the same floor 2 / (n' + 1)) or "binomial" (Wilson's score
interval for the sampled accuracy c/n', with the finite-population correction; it ignores the order). Caveats:
positions are spread evenly over the order, not drawn at random, and the threshold is chosen on the same
residuals; coverage is measured (`interval_coverage`), not proven. At n' = n every method returns the exact
accuracy with zero width.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from lifelong.sortsearch.search import as_sampled, dp_threshold, extrapolate, sample_positions
from lifelong.sortsearch.sort import sort_by_sum

INTERVAL_METHODS = ("difference", "systematic", "binomial")


class AccuracyInterval(NamedTuple):
    """Per row: the paper's estimate k/n (`point`), the interval's centre (`estimate`) and its bounds."""

    point: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def width(self) -> np.ndarray:
        return self.high - self.low

    def covers(self, truth: Any) -> np.ndarray:
        """Whether each true accuracy lies inside its interval (bounds included, with float slack)."""
        t = np.asarray(truth, np.float64)
        return (self.low - 1e-12 <= t) & (t <= self.high + 1e-12)


def _z(confidence: float) -> float:
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), e.g. 0.95; got {confidence}")
    return NormalDist().inv_cdf(0.5 + float(confidence) / 2)


def accuracy_interval(
    sampled: Any,
    positions: Any,
    n: int,
    *,
    confidence: float = 0.95,
    method: str = "difference",
    k: Any = None,
) -> AccuracyInterval:
    """Confidence intervals for the accuracies of rows whose n' outcomes at ranked `positions` were observed.

    `sampled` [rows, n'] are the outcomes in ranked order (the n' sampled items), `k` the thresholds among all n
    (default: the DP threshold extrapolated with `search.extrapolate`). See the module docstring for the methods.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose one of {INTERVAL_METHODS}")
    B = as_sampled(sampled)
    n = int(n)
    pos = np.asarray(positions, np.int64)
    if pos.ndim != 1 or pos.size != B.shape[1]:
        raise ValueError(f"{B.shape[1]} outcomes per row but {pos.size} positions")
    kk = extrapolate(dp_threshold(B), pos, n) if k is None else np.atleast_1d(np.asarray(k, np.int64))
    if kk.shape != (B.shape[0],):
        raise ValueError(f"expected {B.shape[0]} thresholds; got shape {kk.shape}")
    r_count = B.shape[1]
    fpc = max(0.0, 1.0 - r_count / n)
    z = _z(confidence)
    point = kk / n
    if method == "binomial":
        p = B.mean(axis=1, dtype=np.float64)
        if fpc == 0.0:
            return AccuracyInterval(point, p, p.copy(), p.copy())
        n_eff = r_count / fpc
        denom = 1 + z * z / n_eff
        centre = (p + z * z / (2 * n_eff)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / n_eff + z * z / (4 * n_eff * n_eff))
        return AccuracyInterval(point, p, np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1))
    y = (pos[None, :] < kk[:, None]).astype(np.int8)  # the step's prediction at the sampled items
    r = B.astype(np.int8) - y  # residuals in {-1, 0, 1}
    mean = r.mean(axis=1, dtype=np.float64)
    estimate = point + mean
    floor = 2.0 / (r_count + 1)  # variance of n' zero residuals plus the pseudo-residuals +1 and -1
    if method == "difference":
        total, squares = r.sum(axis=1, dtype=np.float64), np.abs(r).sum(axis=1, dtype=np.float64)
        m_aug = total / (r_count + 2)
        var = (squares + 2 - (r_count + 2) * m_aug**2) / (r_count + 1)
    else:  # systematic: successive differences along the order
        if r_count > 1:
            d = np.diff(r.astype(np.float64), axis=1)
            var = np.maximum((d * d).sum(axis=1) / (2 * (r_count - 1)), floor)
        else:
            var = np.full(B.shape[0], floor)
    se = np.sqrt(fpc * var / r_count)
    return AccuracyInterval(point, estimate, np.clip(estimate - z * se, 0, 1), np.clip(estimate + z * se, 0, 1))


def interval_coverage(
    rank: Any,
    evaluate: Any,
    budgets: Sequence[int],
    *,
    confidences: Sequence[float] = (0.9, 0.95),
    methods: Sequence[str] = INTERVAL_METHODS,
    order: np.ndarray | None = None,
    sampling: str = "uniform",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Coverage of the intervals on held-out rows: per budget and method, how many true accuracies fall inside.

    The order comes from `rank` (sum sort) unless given; rows are dense 0/1 [models, samples]. `sampling`:
    "uniform" (the same evenly spread positions for every model, as Sort & Search does) or "random" (each model its
    own seeded draw, `default_rng([seed, budget, row])`). Each result holds counts (`models`, `hits@c`), mean
    widths, and the mean absolute errors of the point (k/n) and of the centre.
    """
    evaluate = np.asarray(evaluate)
    m, n = evaluate.shape
    order = sort_by_sum(np.asarray(rank)) if order is None else np.asarray(order)
    truth = evaluate.mean(axis=1, dtype=np.float64)
    out = []
    for budget in budgets:
        if sampling == "uniform":
            groups = [(np.arange(m), sample_positions(n, int(budget)))]
        elif sampling == "random":
            groups = [
                (np.array([i]), sample_positions(n, int(budget), "random", np.random.default_rng([seed, budget, i])))
                for i in range(m)
            ]
        else:
            raise ValueError(f"sampling must be 'uniform' or 'random'; got {sampling!r}")
        for method in methods:
            row: dict[str, Any] = {"budget": int(budget), "method": method, "sampling": sampling, "models": m}
            for c in confidences:
                hits, width, point, centre = 0, 0.0, 0.0, 0.0
                for rows, pos in groups:
                    iv = accuracy_interval(evaluate[np.ix_(rows, order[pos])], pos, n, confidence=c, method=method)
                    hits += int(iv.covers(truth[rows]).sum())
                    width += float(iv.width.sum())
                    point += float(np.abs(iv.point - truth[rows]).sum())
                    centre += float(np.abs(iv.estimate - truth[rows]).sum())
                row[f"hits@{c:g}"] = hits
                row[f"width@{c:g}"] = width / m
            row["mae_point"] = point / m
            row["mae_estimate"] = centre / m
            out.append(row)
    return out
