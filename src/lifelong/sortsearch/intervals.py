"""Confidence intervals on the accuracies Sort & Search estimates (`accuracy_interval`) and their measured coverage.

The paper's estimate of a model's accuracy is k/n, k the extrapolated DP threshold. Its error is
|a|/n - k/n = (1/n) sum_j r_j with residuals r_j = a_j - y_j in {-1, 0, 1} of the step prediction y. The n'
evaluated samples observe r_j exactly, so the step is the auxiliary variable of a model-assisted ("difference")
estimator of survey sampling: accuracy = k/n + mean(r over the n' sampled items). That is the best estimate the
store reports; its error is the sampling error of a mean of n' residuals out of n, with variance
(1 - n'/n) v / n' for a per-item variance v. How v is estimated follows the sampling design:

- random sampling (a simple random sample of the ranked positions): v = the sample variance of the residuals, the
  textbook finite-population estimator;
- uniform sampling (evenly spread positions: a systematic sample of the ranked order): the residuals' mean varies
  along the order (negative before the threshold, positive after), so the SRS variance overstates the error of a
  systematic sample, which behaves like a stratified sample with one item per stratum. v = the successive-difference
  estimator of systematic sampling (Wolter 1984, v2), sum_h (r_{h+1} - r_h)^2 / (2 (n' - 1)): it sees only the
  variation between neighbours in the order.

Two small-sample corrections, both from statistics rather than tuning: (1) the threshold is chosen on the same n'
outcomes, so in-sample residuals are optimistic (at n' = 8 the step often fits the sample perfectly). The variance
uses leave-one-out residuals instead: each sampled item's outcome minus the prediction of the step fitted by the DP
to the other n' - 1 items (computed for all items at once in O(n') with prefix and suffix maxima of the DP score).
(2) v is never below the Jeffreys floor 1 / (n' + 3/2): the posterior expected squared residual when none of n'
residuals is nonzero, under a Jeffreys Dirichlet(1/2, 1/2, 1/2) prior on the residual's three values, so a sample
fitted perfectly never yields a zero-width interval. The interval is the estimate +- z se (normal quantile), clipped
to [0, 1].

`method`: "difference" (the above, the store's), "systematic" (post-stratified along the order: each sampled item
stands for the ranked positions nearer to it than to any other sampled item, with weight w_h = their share; estimate
k/n + sum_h w_h r_h, variance (1 - n'/n) sum_h w_h^2 s_h^2 with s_h^2 the mean half squared leave-one-out residual
difference to its neighbours. Under uniform sampling every w_h = 1/n' and it equals "difference"; under random
sampling it is the systematic estimator made valid by the weights) or "binomial" (Wilson's score interval for the
sampled accuracy c/n', with the finite-population correction; it ignores the order). Coverage is measured, not
proven (`interval_coverage`, benchmarks/bench_beyond.py). At n' = n every method returns the exact accuracy with zero
width. `sampling` tells the design ("uniform" or "random"); the store keeps which one each estimate used.

Systematic samples and ties: successive differences assume that neighbours in the order say how much an item
differs from the items it stands for. Samples tie often (at most m + 1 distinct sums); ordered by sample id, ties
carry the dataset's layout, and when the samples are equal-size corrupted copies of one test set stored domain
after domain, a uniform step that divides the domain size picks the same base images in every domain, whose
outcomes are correlated, so the variance is underestimated (90% coverage at n' = 4,096 on a 160-model
Fashion-MNIST zoo of 16 x 1,000 samples, step 125 / 32). `sort.tie_keys` orders ties by a fixed hash of the id
instead, which keeps every order deterministic and removes the resonance (95.8, 94.5, 96.0, 96.8% at n' = 8, 128,
1,024, 4,096 on that zoo).
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from lifelong.sortsearch.search import SAMPLING_METHODS, as_sampled, dp_threshold, extrapolate, sample_positions
from lifelong.sortsearch.sort import sort_by_sum

INTERVAL_METHODS = ("difference", "systematic", "binomial")
STORE_METHOD = "difference"  # the interval the store keeps with every estimated accuracy
STORE_CONFIDENCE = 0.95


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


def loo_predictions(sampled: Any, positions: Any, n: int) -> np.ndarray:
    """Leave-one-out step predictions: for each row and sampled item h, whether the step that the DP fits to the
    other n' - 1 sampled items (first maximum, thresholds extrapolated at gap midpoints as `search.extrapolate`)
    predicts item h correct. uint8 [rows, n'], in O(rows * n') time.

    With S(t) the DP score of the first t items (S(0) = 0) and s_h = 2 b_h - 1, dropping item h leaves the scores
    S(t) for t <= h and S(t + 1) - s_h for t >= h: the best of the prefix maximum up to h and the suffix maximum from
    h + 1 (minus s_h) gives the leave-one-out threshold t'. Item h is predicted correct iff t' > h, or t' = h and its
    position lies before the cut extrapolated between its neighbours.
    """
    B = as_sampled(sampled)
    pos = np.asarray(positions, np.int64)
    rows, m = B.shape
    s = 2 * B.astype(np.int64) - 1
    S = np.zeros((rows, m + 1), np.int64)
    np.cumsum(s, axis=1, out=S[:, 1:])
    index = np.arange(m + 1)
    prefix_max = np.maximum.accumulate(S, axis=1)
    new_max = np.ones_like(S, dtype=bool)
    new_max[:, 1:] = S[:, 1:] > prefix_max[:, :-1]
    prefix_arg = np.maximum.accumulate(np.where(new_max, index, 0), axis=1)  # first argmax of S[0..t]
    suffix_max = np.maximum.accumulate(S[:, ::-1], axis=1)[:, ::-1]
    record = np.where(S == suffix_max, index, m + 1)
    suffix_arg = np.minimum.accumulate(record[:, ::-1], axis=1)[:, ::-1]  # first argmax of S[t..n']
    h = np.arange(m)
    left, right = prefix_max[:, :m], suffix_max[:, 1:] - s
    t_loo = np.where(left >= right, prefix_arg[:, :m], suffix_arg[:, 1:] - 1)
    lo = np.where(h > 0, pos[np.maximum(h - 1, 0)] + 1, 0)
    hi = np.where(h + 1 < m, pos[np.minimum(h + 1, m - 1)], int(n))
    before_cut = pos < (lo + hi) // 2
    return ((t_loo > h) | ((t_loo == h) & before_cut[None, :])).astype(np.uint8)


def _cell_weights(pos: np.ndarray, n: int) -> np.ndarray:
    """Share of the n ranked positions nearer to each sampled position than to any other (they sum to 1)."""
    edges = np.concatenate([[0.0], (pos[:-1] + pos[1:] + 1) / 2.0, [float(n)]])
    return np.diff(edges) / n


def _local_variance(loo: np.ndarray) -> np.ndarray:
    """Per item, the mean half squared difference of its leave-one-out residual to its neighbours [rows, n']."""
    d = np.diff(loo, axis=1)
    half = d * d / 2
    out = np.zeros_like(loo)
    if loo.shape[1] > 1:
        out[:, 0], out[:, -1] = half[:, 0], half[:, -1]
        out[:, 1:-1] = (half[:, :-1] + half[:, 1:]) / 2
    return out


def accuracy_interval(
    sampled: Any,
    positions: Any,
    n: int,
    *,
    confidence: float = 0.95,
    method: str = "difference",
    k: Any = None,
    sampling: str = "uniform",
) -> AccuracyInterval:
    """Confidence intervals for the accuracies of rows whose n' outcomes at ranked `positions` were observed.

    `sampled` [rows, n'] are the outcomes in ranked order (the n' sampled items), `k` the thresholds among all n
    (default: the DP threshold extrapolated with `search.extrapolate`), `sampling` the design that chose the
    positions ("uniform": evenly spread; "random": a random sample). See the module docstring for the methods.
    """
    if method not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose one of {INTERVAL_METHODS}")
    if sampling not in SAMPLING_METHODS:
        raise ValueError(f"unknown sampling {sampling!r}; choose one of {SAMPLING_METHODS}")
    B = as_sampled(sampled)
    n = int(n)
    pos = np.asarray(positions, np.int64)
    if pos.ndim != 1 or pos.size != B.shape[1]:
        raise ValueError(f"{B.shape[1]} outcomes per row but {pos.size} positions")
    if pos.size and (pos[0] < 0 or pos[-1] >= n or np.any(np.diff(pos) <= 0)):
        raise ValueError(f"positions must be strictly increasing ranked positions in [0, {n})")
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
    r = B.astype(np.float64) - y  # residuals in {-1, 0, 1}
    loo = B.astype(np.float64) - loo_predictions(B, pos, n)  # leave-one-out residuals
    floor = 1.0 / (r_count + 1.5)  # Jeffreys: expected squared residual when none of n' is nonzero
    if method == "systematic" and sampling == "random":
        w = _cell_weights(pos, n)
        estimate = point + r @ w
        var = np.maximum(_local_variance(loo) @ (w * w), floor * float(w @ w))
        se = np.sqrt(fpc * var)
    else:  # difference; systematic under uniform sampling (equal weights) is the same estimator
        estimate = point + r.mean(axis=1)
        if r_count < 2:
            per_item = np.full(B.shape[0], floor)
        elif sampling == "uniform":
            d = np.diff(loo, axis=1)
            per_item = np.maximum((d * d).sum(axis=1) / (2 * (r_count - 1)), floor)
        else:
            per_item = np.maximum(loo.var(axis=1, ddof=1), floor)
        se = np.sqrt(fpc * per_item / r_count)
    estimate = np.clip(estimate, 0.0, 1.0)
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
                    iv = accuracy_interval(
                        evaluate[np.ix_(rows, order[pos])], pos, n, confidence=c, method=method, sampling=sampling
                    )
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
