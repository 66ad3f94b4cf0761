"""Beyond the paper (spec section 6): confidence intervals on estimated accuracies, rankings that beat one global
sum order, and a re-sort policy for a growing benchmark.

1. Intervals (`accuracy_interval`). The paper's estimate of a model's accuracy is k/n, k the extrapolated DP
   threshold. Its error is |a|/n - k/n = (1/n) sum_j r_j with residuals r_j = a_j - y_j in {-1, 0, 1} of the
   step prediction y. The n' evaluated samples observe r_j exactly, so the step is a model-assisted ("difference")
   estimator of survey sampling: accuracy = k/n + mean(r over the n' sampled items), with the standard error of a
   mean of n' draws out of n, sqrt((1 - n'/n) s_r^2 / n'), and a normal quantile. The residuals concentrate near
   the threshold, so s_r^2 is much smaller than the binomial p(1 - p) of the outcomes themselves: intervals are
   narrow where the step fits. `method`: "difference" (s_r^2 = the sample variance, with one +1 and one -1
   pseudo-residual added so that a perfect fit on the sample never gives a zero-width interval), "systematic"
   (the successive-difference variance of systematic sampling, sum (r_{j+1} - r_j)^2 / (2 (n' - 1)), with the
   same floor 2 / (n' + 1)) or "binomial" (Wilson's score interval for the sampled accuracy c/n', with the
   finite-population correction; it ignores the order). Caveats: positions are spread evenly over the order,
   not drawn at random, and the threshold is chosen on the same residuals; coverage is measured, not proven.
   At n' = n every method returns the exact accuracy with zero width.

2. Rankings (`make_predictor`, `compare_rankings`). Each method spends exactly n' evaluations per new model:
   "sum" / "recursive": the paper's step on one order. "clusterK": k-means (K clusters) on the ranking models'
   standardised rows (each row centred and scaled: models group by which samples they solve, not by accuracy),
   one sum order per cluster (ties broken by the global sums), plus the global order; a new model is evaluated
   on the n' uniform positions of the global order, and the DP runs on those same outcomes laid out in each
   candidate order (their positions there); the candidate with the best DP score per sampled item wins.
   "domain": one threshold per domain (samples carry a domain label): the global order restricted to each
   domain, n' split across domains by size, a DP per domain. "clusterK+domain": both, the candidate order chosen
   by its total DP score over the domains. "rasch" / "2pl": an item-response model fitted by
   alternating damped Newton steps (joint MAP, weak normal priors) on the ranking rows; samples are ordered by
   difficulty b_j, a new model is evaluated on n' uniform positions of that order, its ability theta is the MAP
   from its outcomes and its row is predicted as 1[theta > b_j] (P > 1/2). "2pl-dp": the 2PL difficulty order
   with the DP threshold instead. Rasch difficulties are a monotone function of column sums, so "rasch" differs
   from "sum" only by its threshold rule.

3. Re-sorting (`should_resort`, `simulate_growth`). A sort is stale when many samples were added since (their
   places were estimated from m' models, not counted), when many models were added (the ranking set is small next
   to them), or when new models fit the order worse than the models added right after the sort (fit = DP score
   per sampled item, S(k')/n', observable from each model's n' outcomes). `ResortPolicy` holds the three limits;
   `should_resort` takes `ResortStats` (or a BenchStore, summarised by `store_resort_stats`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from lifelong.bench.metrics import agreement, pearson
from lifelong.bench.search import best_step, dp_threshold, extrapolate, sample_positions, step_scores
from lifelong.bench.sort import descending_order, model_order, sort_by_sum, sort_recursive

INTERVAL_METHODS = ("difference", "systematic", "binomial")
RANKING_METHODS = ("sum", "recursive", "cluster2", "cluster4", "domain", "cluster4+domain", "rasch", "2pl", "2pl-dp")


def _as_sampled(sampled: Any) -> np.ndarray:
    """0/1 outcomes [rows, n'] as uint8 (a 1-D row becomes one row)."""
    B = np.asarray(sampled)
    if B.ndim == 1:
        B = B[None, :]
    if B.ndim != 2 or B.shape[1] == 0:
        raise ValueError(f"sampled outcomes must be [rows, n'] with n' >= 1; got shape {B.shape}")
    if B.dtype != np.bool_ and (not np.issubdtype(B.dtype, np.integer) or (B.size and (B.min() < 0 or B.max() > 1))):
        raise ValueError("sampled outcomes must hold only 0 and 1")
    return B.astype(np.uint8, copy=False)


def _inverse(order: np.ndarray) -> np.ndarray:
    """Ranked position of every sample id: inv[order[p]] = p."""
    inv = np.empty(order.size, np.int64)
    inv[order] = np.arange(order.size, dtype=np.int64)
    return inv


def fit_score(sampled: Any) -> np.ndarray:
    """DP fit per sampled item, S(k')/n' = (agreements - disagreements of the best step) / n', in [0, 1] per row."""
    B = _as_sampled(sampled)
    return best_step(step_scores(B)).score / B.shape[1]


# ---------------------------------------------------------------------------------------------------------
# 1. confidence intervals


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
    B = _as_sampled(sampled)
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


# ---------------------------------------------------------------------------------------------------------
# 2. rankings


def kmeans_rows(X: Any, k: int, *, seed: int = 0, n_init: int = 4, iters: int = 50) -> np.ndarray:
    """Cluster labels (int64 [m]) of the rows of X by Lloyd's k-means with k-means++ starts (best of n_init)."""
    X = np.asarray(X, np.float32)
    m = X.shape[0]
    k = int(k)
    if not 1 <= k <= m:
        raise ValueError(f"k must lie in [1, {m}] (the number of rows); got {k}")
    rng = np.random.default_rng(seed)
    sq = np.einsum("ij,ij->i", X, X)
    best_labels, best_inertia = np.zeros(m, np.int64), np.inf
    for _ in range(int(n_init)):
        centres = [X[rng.integers(m)]]
        for _ in range(1, k):  # k-means++: next centre drawn with probability proportional to squared distance
            C = np.stack(centres)
            d2 = np.maximum(sq[:, None] - 2 * X @ C.T + np.einsum("ij,ij->i", C, C)[None, :], 0).min(axis=1)
            total = float(d2.sum())
            centres.append(X[rng.choice(m, p=d2 / total)] if total > 0 else X[rng.integers(m)])
        C = np.stack(centres)
        labels = np.full(m, -1, np.int64)
        for _ in range(int(iters)):
            d2 = sq[:, None] - 2 * X @ C.T + np.einsum("ij,ij->i", C, C)[None, :]
            new = d2.argmin(axis=1)
            if np.array_equal(new, labels):
                break
            labels = new
            for c in range(k):
                members = labels == c
                if members.any():
                    C[c] = X[members].mean(axis=0)
        inertia = float(np.maximum(d2[np.arange(m), labels], 0).sum())
        if inertia < best_inertia:
            best_labels, best_inertia = labels.copy(), inertia
    _, relabelled = np.unique(best_labels, return_inverse=True)  # drop empty clusters: labels 0..k'-1
    return relabelled.astype(np.int64)


class IRTFit(NamedTuple):
    """Item-response parameters: per sample difficulty b and discrimination a, per ranking model ability theta."""

    difficulty: np.ndarray
    discrimination: np.ndarray
    ability: np.ndarray


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit_irt(
    R: Any, *, discrimination: bool = True, iters: int = 30, prior_b: float = 3.0, prior_log_a: float = 0.5
) -> IRTFit:
    """Fit P(R[i, j] = 1) = sigmoid(a_j (theta_i - b_j)) by alternating damped Newton steps (joint MAP).

    Priors: theta ~ N(0, 1) (abilities are re-standardised after each sweep, a and b rescaled to match),
    b ~ N(0, prior_b^2), log a ~ N(0, prior_log_a^2); they keep all-correct / all-wrong samples finite.
    `discrimination=False` is the Rasch model (a = 1, abilities only centred).
    """
    Y = np.asarray(R, np.float64)
    m, n = Y.shape
    if m < 2:
        raise ValueError("an item-response fit needs at least 2 ranking models")
    col = Y.mean(axis=0)
    b = -np.log(np.clip(col, 0.5 / m, 1 - 0.5 / m) / np.clip(1 - col, 0.5 / m, 1 - 0.5 / m))
    row = Y.mean(axis=1)
    theta = np.log(np.clip(row, 0.01, 0.99) / np.clip(1 - row, 0.01, 0.99))
    log_a = np.zeros(n)
    for _ in range(int(iters)):
        a = np.exp(log_a)
        for _ in range(2):  # abilities given items
            z = a[None, :] * (theta[:, None] - b[None, :])
            p = _sigmoid(z)
            w = p * (1 - p)
            grad = (Y - p) @ a - theta
            hess = w @ (a * a) + 1.0
            theta += np.clip(grad / hess, -1, 1)
        z = a[None, :] * (theta[:, None] - b[None, :])
        p = _sigmoid(z)
        w = p * (1 - p)
        resid = Y - p
        grad_b = -a * resid.sum(axis=0) - b / prior_b**2
        hess_b = a * a * w.sum(axis=0) + 1 / prior_b**2
        b += np.clip(grad_b / hess_b, -1, 1)
        if discrimination:
            z = a[None, :] * (theta[:, None] - b[None, :])
            p = _sigmoid(z)
            grad_a = ((Y - p) * z).sum(axis=0) - log_a / prior_log_a**2
            hess_a = (p * (1 - p) * z * z).sum(axis=0) + 1 / prior_log_a**2
            log_a += np.clip(grad_a / hess_a, -0.5, 0.5)
            mu, sd = theta.mean(), max(theta.std(), 1e-6)
            theta, b, log_a = (theta - mu) / sd, (b - mu) / sd, log_a + math.log(sd)
        else:
            mu = theta.mean()
            theta, b = theta - mu, b - mu
    return IRTFit(b, np.exp(log_a), theta)


def irt_abilities(sampled: Any, a: Any, b: Any, *, prior_sd: float = 1.0, iters: int = 25) -> np.ndarray:
    """MAP ability per row from 0/1 outcomes [rows, n'] on items with discriminations a and difficulties b [n']."""
    B = _as_sampled(sampled).astype(np.float64)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    theta = np.zeros(B.shape[0])
    for _ in range(int(iters)):
        p = _sigmoid(a[None, :] * (theta[:, None] - b[None, :]))
        grad = (B - p) @ a - theta / prior_sd**2
        hess = (p * (1 - p)) @ (a * a) + 1 / prior_sd**2
        theta += np.clip(grad / hess, -1, 1)
    return theta


class Predictor:
    """A ranking method for new models: which n' samples to evaluate, and the full rows predicted from them."""

    name = "base"

    def sample_ids(self, budget: int) -> np.ndarray:
        raise NotImplementedError

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        """Dense uint8 rows [r, n] in sample order from outcomes [r, n'] on `sample_ids(budget)`."""
        raise NotImplementedError


class StepPredictor(Predictor):
    """The paper's search: n' uniform positions of one order, DP threshold, extrapolated step."""

    def __init__(self, order: np.ndarray, name: str = "sum") -> None:
        self.order = np.asarray(order, np.int64)
        self.rank = _inverse(self.order)
        self.name = name

    def sample_ids(self, budget: int) -> np.ndarray:
        return self.order[sample_positions(self.order.size, budget)]

    def thresholds(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        return extrapolate(
            dp_threshold(_as_sampled(outcomes)), sample_positions(self.order.size, budget), self.order.size
        )

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        k = self.thresholds(outcomes, budget)
        return (self.rank[None, :] < k[:, None]).astype(np.uint8)


class ClusterPredictor(Predictor):
    """Several orders: the global sum order and one per k-means cluster of ranking models (see module docstring)."""

    def __init__(
        self, R: np.ndarray, k: int, *, seed: int = 0, include_global: bool = True, standardise: bool = True
    ) -> None:
        R = np.asarray(R)
        X = R.astype(np.float32)
        if standardise:  # cluster by correlation, not by accuracy: centre and scale every row
            X -= X.mean(axis=1, keepdims=True)
            X /= np.maximum(X.std(axis=1, keepdims=True), 1e-6)
        self.labels = kmeans_rows(X, k, seed=seed)
        global_sums = R.sum(axis=0, dtype=np.int64)
        self.global_order = descending_order(global_sums).astype(np.int64)
        m = R.shape[0]
        orders = [self.global_order] if include_global else []
        for c in range(int(self.labels.max()) + 1):
            sums = R[self.labels == c].sum(axis=0, dtype=np.int64)
            orders.append(descending_order(sums * (m + 1) + global_sums).astype(np.int64))  # ties: global sums
        self.orders = orders
        self.ranks = [_inverse(o) for o in orders]
        self.name = f"cluster{k}"
        self.last_choice: np.ndarray | None = None

    def sample_ids(self, budget: int) -> np.ndarray:
        return self.global_order[sample_positions(self.global_order.size, budget)]

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        B = _as_sampled(outcomes)
        ids = self.sample_ids(budget)
        n = self.global_order.size
        scores, ks = [], []
        for rank in self.ranks:
            pos = rank[ids]
            perm = np.argsort(pos, kind="stable")
            best = best_step(step_scores(B[:, perm]))
            scores.append(best.score / B.shape[1])
            ks.append(extrapolate(best.k, pos[perm], n))
        choice = np.argmax(np.stack(scores), axis=0)  # first maximum: the global order wins ties
        self.last_choice = choice
        k = np.stack(ks)[choice, np.arange(B.shape[0])]
        out = np.empty((B.shape[0], n), np.uint8)
        for c in np.unique(choice):
            rows = choice == c
            out[rows] = self.ranks[c][None, :] < k[rows, None]
        return out


def split_budget(sizes: Sequence[int], budget: int) -> np.ndarray:
    """n' split across groups in proportion to their sizes (largest remainder), at least 1 and at most size each."""
    sizes = np.asarray(sizes, np.int64)
    budget = int(budget)
    if budget < sizes.size or budget > sizes.sum():
        raise ValueError(f"a budget of {budget} cannot give each of {sizes.size} groups (total {sizes.sum()}) one item")
    share = np.maximum(1, np.floor(budget * sizes / sizes.sum()).astype(np.int64))
    share = np.minimum(share, sizes)
    while share.sum() > budget:  # rounding up to 1 overshot: take back from the largest shares
        share[np.argmax(share)] -= 1
    exact = budget * sizes / sizes.sum()
    while share.sum() < budget:
        room = np.where(share < sizes, exact - share, -np.inf)
        share[np.argmax(room)] += 1
    return share


class DomainPredictor(Predictor):
    """One threshold per domain on the global order restricted to that domain."""

    def __init__(self, order: np.ndarray, domains: Any, name: str = "domain") -> None:
        order = np.asarray(order, np.int64)
        labels = np.asarray(domains)
        if labels.shape != order.shape:
            raise ValueError(f"one domain label per sample is needed: {labels.shape} labels for {order.size} samples")
        _, codes = np.unique(labels, return_inverse=True)
        ranked_codes = codes[order]
        self.orders = [order[ranked_codes == d] for d in range(int(codes.max()) + 1)]
        self.n = order.size
        self.name = name

    def _plan(self, budget: int) -> list[np.ndarray]:
        shares = split_budget([o.size for o in self.orders], budget)
        return [sample_positions(o.size, s) for o, s in zip(self.orders, shares, strict=True)]

    def sample_ids(self, budget: int) -> np.ndarray:
        return np.concatenate([o[p] for o, p in zip(self.orders, self._plan(budget), strict=True)])

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        B = _as_sampled(outcomes)
        out = np.zeros((B.shape[0], self.n), np.uint8)
        start = 0
        for o, pos in zip(self.orders, self._plan(budget), strict=True):
            k = extrapolate(dp_threshold(B[:, start : start + pos.size]), pos, o.size)
            start += pos.size
            rank = np.arange(o.size)
            for i in range(B.shape[0]):
                out[i, o[rank < k[i]]] = 1
        return out


class ClusterDomainPredictor(Predictor):
    """Cluster orders with one threshold per domain: the n' samples are planned per domain on the global order (as
    "domain"), every candidate order (global + clusters) gets a DP per domain on those outcomes, and the candidate
    with the best total DP score per sampled item gives the row."""

    def __init__(self, R: np.ndarray, k: int, domains: Any, *, seed: int = 0) -> None:
        clusters = ClusterPredictor(R, k, seed=seed)
        self.labels = clusters.labels
        self.plan = DomainPredictor(clusters.global_order, domains)
        _, self.codes = np.unique(np.asarray(domains), return_inverse=True)
        self.domain_ranks = []  # per candidate order: each sample's position within its domain's part of the order
        for order in clusters.orders:
            rank = np.empty(order.size, np.int64)
            for d in range(int(self.codes.max()) + 1):
                part = order[self.codes[order] == d]
                rank[part] = np.arange(part.size)
            self.domain_ranks.append(rank)
        self.sizes = np.bincount(self.codes)
        self.name = f"cluster{k}+domain"
        self.last_choice: np.ndarray | None = None

    def sample_ids(self, budget: int) -> np.ndarray:
        return self.plan.sample_ids(budget)

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        B = _as_sampled(outcomes)
        ids = self.sample_ids(budget)
        groups = [np.flatnonzero(self.codes[ids] == d) for d in range(self.sizes.size)]
        totals, thresholds = [], []
        for rank in self.domain_ranks:
            total = np.zeros(B.shape[0])
            ks = np.zeros((self.sizes.size, B.shape[0]), np.int64)
            for d, cols in enumerate(groups):
                pos = rank[ids[cols]]
                perm = np.argsort(pos, kind="stable")
                best = best_step(step_scores(B[:, cols[perm]]))
                total += best.score
                ks[d] = extrapolate(best.k, pos[perm], int(self.sizes[d]))
            totals.append(total / B.shape[1])
            thresholds.append(ks)
        choice = np.argmax(np.stack(totals), axis=0)
        self.last_choice = choice
        out = np.empty((B.shape[0], self.codes.size), np.uint8)
        for i, c in enumerate(choice):
            out[i] = self.domain_ranks[c] < thresholds[c][self.codes, i]
        return out


class IRTPredictor(Predictor):
    """Samples ordered by fitted difficulty; a new row is 1[theta > b_j] ("theta") or the DP step ("dp")."""

    def __init__(self, R: np.ndarray, *, discrimination: bool = True, rule: str = "theta", name: str = "2pl") -> None:
        if rule not in ("theta", "dp"):
            raise ValueError(f"rule must be 'theta' or 'dp'; got {rule!r}")
        R = np.asarray(R)
        self.fit = fit_irt(R, discrimination=discrimination)
        sums = R.sum(axis=0, dtype=np.int64)
        self.order = np.lexsort((-sums, self.fit.difficulty)).astype(np.int64)  # easiest first; ties: larger sum
        self.step = StepPredictor(self.order, name)
        self.rule = rule
        self.name = name

    def sample_ids(self, budget: int) -> np.ndarray:
        return self.step.sample_ids(budget)

    def abilities(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        ids = self.sample_ids(budget)
        return irt_abilities(outcomes, self.fit.discrimination[ids], self.fit.difficulty[ids])

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        if self.rule == "dp":
            return self.step.predict(outcomes, budget)
        theta = self.abilities(outcomes, budget)
        return (theta[:, None] > self.fit.difficulty[None, :]).astype(np.uint8)


def make_predictor(method: str, R: Any, *, domains: Any = None, seed: int = 0) -> Predictor:
    """A fitted predictor from ranking rows R [m, n] (dense 0/1): RANKING_METHODS, clusterK or clusterK+domain."""
    R = np.asarray(R)
    if method == "sum":
        return StepPredictor(sort_by_sum(R), "sum")
    if method == "recursive":
        return StepPredictor(sort_recursive(R), "recursive")
    if method.startswith("cluster") and method[7:].isdigit():
        return ClusterPredictor(R, int(method[7:]), seed=seed)
    if method.startswith("cluster") and method.endswith("+domain") and method[7:-7].isdigit():
        if domains is None:
            raise ValueError(f"the {method!r} method needs one domain label per sample")
        return ClusterDomainPredictor(R, int(method[7:-7]), domains, seed=seed)
    if method == "domain":
        if domains is None:
            raise ValueError("the 'domain' method needs one domain label per sample")
        return DomainPredictor(sort_by_sum(R), domains)
    if method == "rasch":
        return IRTPredictor(R, discrimination=False, name="rasch")
    if method == "2pl":
        return IRTPredictor(R, discrimination=True, name="2pl")
    if method == "2pl-dp":
        return IRTPredictor(R, discrimination=True, rule="dp", name="2pl-dp")
    raise ValueError(
        f"unknown ranking method {method!r}; choose one of {RANKING_METHODS} (or clusterK, clusterK+domain)"
    )


def score_rows(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Mean sample-level error, kappa (defined rows), aggregate error and Pearson r of predicted vs true rows."""
    agree = agreement(truth, predicted)
    kappa = agree.kappa
    n = agree.n
    return {
        "error": float(agree.error.mean()),
        "kappa": float(np.nanmean(kappa)) if np.isfinite(kappa).any() else math.nan,
        "aggregate_error": float(agree.aggregate_error.mean()),
        "pearson": pearson(agree.ones_y / n, agree.ones_a / n) if truth.shape[0] >= 2 else math.nan,
    }


def compare_rankings(
    A: Any,
    rank_ids: Any,
    eval_ids: Any,
    budgets: Sequence[int],
    *,
    methods: Sequence[str] = RANKING_METHODS,
    domains: Any = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Every method on the same ranking / held-out split of A [models, samples] and the same budgets."""
    A = np.asarray(A)
    R = np.ascontiguousarray(A[np.asarray(rank_ids)])
    E = np.ascontiguousarray(A[np.asarray(eval_ids)])
    out = []
    for method in methods:
        started = time.perf_counter()
        predictor = make_predictor(method, R, domains=domains, seed=seed)
        fit_seconds = time.perf_counter() - started
        for budget in budgets:
            ids = predictor.sample_ids(int(budget))
            if ids.size != int(budget):
                raise AssertionError(f"{method} planned {ids.size} evaluations for a budget of {budget}")
            predicted = predictor.predict(E[:, ids], int(budget))
            scores = score_rows(E, predicted)
            # model-assisted accuracy: predicted accuracy + mean residual on the n' evaluated samples
            corrected = predicted.mean(axis=1) + (E[:, ids].astype(np.float64) - predicted[:, ids]).mean(axis=1)
            scores["corrected_aggregate_error"] = float(np.abs(corrected - E.mean(axis=1)).mean())
            out.append({"method": method, "budget": int(budget), **scores, "fit_s": fit_seconds})
    return out


# ---------------------------------------------------------------------------------------------------------
# 3. re-sort policy


@dataclass(frozen=True)
class ResortPolicy:
    """Re-sort when any limit is passed (None disables it).

    sample_fraction f: samples added since the sort > f x samples in the sort. model_ratio g: models added since
    the sort > g x ranking models. fit_tolerance: mean fit of the last `window` models added < mean fit of the first
    `window` models added after the sort minus the tolerance (needs 2 x window models since the sort).
    """

    sample_fraction: float | None = 0.25
    model_ratio: float | None = 1.0
    fit_tolerance: float | None = 0.03
    window: int = 8

    def __post_init__(self) -> None:
        for name in ("sample_fraction", "model_ratio", "fit_tolerance"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a non-negative number or None; got {value!r}")
        if int(self.window) < 1:
            raise ValueError(f"window must be >= 1; got {self.window}")


@dataclass(frozen=True)
class ResortStats:
    """What the policy looks at: sizes at the last sort and now, and the fits of models added since."""

    n_sorted: int
    n_now: int
    ranking_models: int
    models_added: int
    baseline_fit: float | None = None
    recent_fit: float | None = None

    @classmethod
    def from_fits(
        cls, n_sorted: int, n_now: int, ranking_models: int, fits: Sequence[float], window: int
    ) -> ResortStats:
        """Stats whose fits are the means of the first and the last `window` of `fits` (in insertion order)."""
        fits = [float(f) for f in fits]
        w = int(window)
        baseline = float(np.mean(fits[:w])) if len(fits) >= w else None
        recent = float(np.mean(fits[-w:])) if len(fits) >= 2 * w else None
        return cls(int(n_sorted), int(n_now), int(ranking_models), len(fits), baseline, recent)


def store_resort_stats(store: Any, window: int = 8) -> ResortStats | None:
    """ResortStats of a BenchStore's latest sort (None when it has none): the fits are those of the estimated
    models inserted on that sort, in id order, from their observed cells laid out in the sort's order."""
    sorts = store.sorts()
    if not sorts:
        return None
    latest = sorts[-1]
    n_now, _ = store.size()
    order = store.load_sort(latest.version).astype(np.int64)
    rank = _inverse(order)
    fits = []
    for model_id, entry in sorted(store.estimates().items()):
        if entry.sort_version != latest.version:
            continue
        observed = np.unpackbits(store.read_observed([model_id]), axis=1, count=n_now)[0, : order.size]
        row = np.unpackbits(store.read_rows([model_id]), axis=1, count=n_now)[0, : order.size]
        ids = np.flatnonzero(observed)
        if ids.size:
            ids = ids[np.argsort(rank[ids], kind="stable")]
            fits.append(float(fit_score(row[ids])[0]))
    return ResortStats.from_fits(latest.n_samples, n_now, len(latest.ranking_models), fits, window)


def should_resort(stats: Any, policy: ResortPolicy | None = None) -> tuple[bool, str]:
    """(re-sort now?, why): every limit of `policy` that is passed, or why none is. `stats` is ResortStats or a
    BenchStore (summarised with store_resort_stats)."""
    policy = policy or ResortPolicy()
    if not isinstance(stats, ResortStats):
        stats = store_resort_stats(stats, policy.window)
        if stats is None:
            return True, "no sort yet"
    reasons = []
    added = stats.n_now - stats.n_sorted
    if policy.sample_fraction is not None and added > policy.sample_fraction * stats.n_sorted:
        reasons.append(f"samples: {added} added > {policy.sample_fraction:g} x {stats.n_sorted} sorted")
    if policy.model_ratio is not None and stats.models_added > policy.model_ratio * stats.ranking_models:
        reasons.append(
            f"models: {stats.models_added} added > {policy.model_ratio:g} x {stats.ranking_models} ranking models"
        )
    if policy.fit_tolerance is not None and stats.baseline_fit is not None and stats.recent_fit is not None:
        drop = stats.baseline_fit - stats.recent_fit
        if drop > policy.fit_tolerance:
            reasons.append(
                f"fit: recent {stats.recent_fit:.3f} < after-sort {stats.baseline_fit:.3f} - {policy.fit_tolerance:g}"
            )
    if reasons:
        return True, "; ".join(reasons)
    return False, f"within limits ({added} samples, {stats.models_added} models added since the sort)"


def simulate_growth(
    A: Any,
    domains: Any,
    policy: ResortPolicy | str,
    *,
    initial_domains: int = 4,
    domains_per_step: int = 1,
    initial_ranking: int = 10,
    probe_models: int = 30,
    budget: int = 256,
    sample_budget: int = 8,
    promote: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Grow a benchmark from the full matrix A [models, samples] and compare re-sort policies on it.

    Models are shuffled (seeded): `probe_models` are held out to measure estimation error after every step (never
    ranking, their evaluations not counted), `initial_ranking` start as fully evaluated ranking models, the rest
    arrive evenly over the steps. Samples arrive by whole domains (in order of first appearance): the first
    `initial_domains` at start, then `domains_per_step` per step. A step: (1) new samples are evaluated on
    `sample_budget` ranking models (most accurate first) and placed in the order by their estimated number of
    ranking models that get them right (the DP threshold over the models), (2) arriving models are evaluated on
    `budget` uniform positions and estimated, their fit recorded, (3) the policy decides ("never", "always" or a
    ResortPolicy); a re-sort evaluates the ranking models on every sample and (with `promote`) promotes the models
    added since the last sort to ranking models (fully evaluated), then sorts by exact sums, (4) the probes are
    estimated.
    Costs count evaluated cells beyond the initial ranking block.
    """
    A = np.asarray(A)
    M = A.shape[0]
    labels = np.asarray(domains)
    _, first = np.unique(labels, return_index=True)
    domain_seq = labels[np.sort(first)]
    blocks = [
        np.flatnonzero(np.isin(labels, domain_seq[i : i + domains_per_step]))
        for i in range(initial_domains, domain_seq.size, domains_per_step)
    ]
    cols = np.flatnonzero(np.isin(labels, domain_seq[:initial_domains]))
    perm = np.random.default_rng(seed).permutation(M)
    probes = perm[:probe_models]
    ranking = list(perm[probe_models : probe_models + initial_ranking])
    stream = perm[probe_models + initial_ranking :]
    if not blocks or stream.size == 0 or len(ranking) < 2:
        raise ValueError("nothing to grow: need domains beyond the initial ones, arriving models and 2 ranking models")
    per_step = np.array_split(stream, len(blocks))
    evaluated = np.zeros(A.shape, bool)
    evaluated[np.ix_(ranking, cols)] = True
    base_cells = int(evaluated.sum())

    def resort() -> np.ndarray:
        evaluated[np.ix_(ranking, cols)] = True
        return A[np.ix_(ranking, cols)].sum(axis=0, dtype=np.int64)

    keys = resort()
    n_sorted, ranking_at_sort, fits, resorts, steps = cols.size, len(ranking), [], 0, []
    added_models: list[int] = []
    insertion_errors: list[float] = []
    for step, (block, arrivals) in enumerate(zip(blocks, per_step, strict=True)):
        # (1) samples: estimated key = DP threshold over the ranking models, most accurate first
        rank_arr = np.asarray(ranking)
        ranked_models = rank_arr[model_order(A[np.ix_(rank_arr, cols)].mean(axis=1))]
        mpos = sample_positions(ranked_models.size, min(sample_budget, ranked_models.size))
        chosen = ranked_models[mpos]
        evaluated[np.ix_(chosen, block)] = True
        new_keys = extrapolate(dp_threshold(A[np.ix_(chosen, block)].T), mpos, ranked_models.size)
        cols = np.concatenate([cols, block])
        keys = np.concatenate([keys, new_keys])
        order = descending_order(keys).astype(np.int64)
        n_now = cols.size
        pos = sample_positions(n_now, budget)
        # (2) arriving models, estimated on the current order
        for model in arrivals:
            outcomes = A[model, cols[order[pos]]]
            evaluated[model, cols[order[pos]]] = True
            k = int(extrapolate(dp_threshold(outcomes[None, :]), pos, n_now)[0])
            truth = A[model, cols[order]]
            insertion_errors.append(float((truth != (np.arange(n_now) < k)).mean()))
            fits.append(float(fit_score(outcomes)[0]))
            added_models.append(int(model))
        # (3) the policy
        if policy == "always":
            do, why = True, "every step"
        elif policy == "never":
            do, why = False, "never"
        else:
            stats = ResortStats.from_fits(n_sorted, n_now, ranking_at_sort, fits, policy.window)
            do, why = should_resort(stats, policy)
        if do:
            if promote:
                ranking.extend(added_models)
            keys = resort()
            order = descending_order(keys).astype(np.int64)
            n_sorted, ranking_at_sort, fits, added_models, resorts = n_now, len(ranking), [], [], resorts + 1
        # (4) probes on the current order
        sampled = A[np.ix_(probes, cols[order[pos]])]
        k = extrapolate(dp_threshold(sampled), pos, n_now)
        truth = A[np.ix_(probes, cols[order])]
        pred = (np.arange(n_now)[None, :] < k[:, None]).astype(np.uint8)
        scores = score_rows(truth, pred)
        steps.append({"step": step, "n": n_now, "ranking": len(ranking), "resort": bool(do), "reason": why, **scores})
    return {
        "policy": policy if isinstance(policy, str) else "policy",
        "resorts": resorts,
        "extra_cells": int(evaluated.sum()) - base_cells,
        "full_cells": int(A.size) - base_cells,
        "mean_error": float(np.mean([s["error"] for s in steps])),
        "mean_aggregate_error": float(np.mean([s["aggregate_error"] for s in steps])),
        "mean_kappa": float(np.mean([s["kappa"] for s in steps])),
        "final_error": steps[-1]["error"],
        "insertion_error": float(np.mean(insertion_errors)),
        "steps": steps,
    }


# ---------------------------------------------------------------------------------------------------------
# command


def _domains_from_csv(path: str | Path, n: int) -> np.ndarray:
    import csv

    with Path(path).open(newline="") as handle:
        labels = [row["domain"] for row in csv.DictReader(handle)]
    if len(labels) != n:
        raise ValueError(f"{path}: {len(labels)} samples listed but the matrix has {n} columns")
    return np.asarray(labels)


def beyond_command(
    matrix_path: str | Path,
    samples_csv: str | Path | None = None,
    budgets: str | Sequence[int] = "1024,2048,4096",
    methods: str | Sequence[str] = RANKING_METHODS,
    split_seed: int = 0,
    confidence: float = 0.95,
    as_json: bool = False,
) -> dict[str, Any]:
    """`lifelong bench beyond`: a seeded half/half split of the matrix's models; interval coverage and ranking
    methods compared on the held-out half. Prints tables (or JSON) and returns the results."""
    from lifelong.bench.experiment import load_matrix

    A = np.asarray(load_matrix(matrix_path))
    budget_list = [int(b) for b in budgets.split(",")] if isinstance(budgets, str) else [int(b) for b in budgets]
    method_list = [m.strip() for m in methods.split(",")] if isinstance(methods, str) else list(methods)
    domains = _domains_from_csv(samples_csv, A.shape[1]) if samples_csv is not None else None
    if domains is None:
        method_list = [m for m in method_list if m != "domain"]
    perm = np.random.default_rng(split_seed).permutation(A.shape[0])
    rank_ids, eval_ids = np.sort(perm[: A.shape[0] // 2]), np.sort(perm[A.shape[0] // 2 :])
    coverage = interval_coverage(A[rank_ids], A[eval_ids], budget_list, confidences=(confidence,))
    rankings = compare_rankings(A, rank_ids, eval_ids, budget_list, methods=method_list, domains=domains)
    result = {"shape": list(A.shape), "split_seed": split_seed, "coverage": coverage, "rankings": rankings}
    if as_json:
        print(json.dumps(result, indent=2, default=lambda v: None))
    else:
        print(f"matrix {A.shape}, {len(rank_ids)} ranking / {len(eval_ids)} held-out models (split seed {split_seed})")
        print(format_coverage(coverage))
        print(format_rankings(rankings))
    return result


def format_coverage(rows: Sequence[dict[str, Any]]) -> str:
    """Coverage rows (counts may be summed over repeated splits by the caller) as a table, in %."""
    levels = sorted({key.split("@")[1] for r in rows for key in r if key.startswith("hits@")}, key=float)
    head = f"{'budget':>7} {'sampling':>8} {'method':>10} {'models':>6}"
    head += "".join(f" {'cov@' + c:>8} {'width@' + c:>10}" for c in levels)
    head += f" {'|k/n-a|':>8} {'|est-a|':>8}"
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = "".join(f" {100 * r['hits@' + c] / r['models']:>8.1f} {100 * r['width@' + c]:>10.2f}" for c in levels)
        lines.append(
            f"{r['budget']:>7} {r.get('sampling', 'uniform'):>8} {r['method']:>10} {r['models']:>6}{cells}"
            f" {100 * r['mae_point']:>8.2f} {100 * r['mae_estimate']:>8.2f}"
        )
    return "\n".join(lines)


def format_rankings(rows: Sequence[dict[str, Any]]) -> str:
    """Ranking comparison rows as a table (errors in %)."""
    head = f"{'budget':>7} {'method':>10} {'error %':>8} {'kappa':>7} {'agg err %':>9} {'pearson':>8} {'agg+res %':>9}"
    head += f" {'fit s':>6}"
    lines = [head, "-" * len(head)]
    for r in sorted(
        rows,
        key=lambda r: (
            r["budget"],
            RANKING_METHODS.index(r["method"]) if r["method"] in RANKING_METHODS else 99,
            r["method"],
        ),
    ):
        lines.append(
            f"{r['budget']:>7} {r['method']:>10} {100 * r['error']:>8.2f} {r['kappa']:>7.3f} "
            f"{100 * r['aggregate_error']:>9.2f} {r['pearson']:>8.4f} {100 * r['corrected_aggregate_error']:>9.2f}"
            f" {r['fit_s']:>6.2f}"
        )
    return "\n".join(lines)
