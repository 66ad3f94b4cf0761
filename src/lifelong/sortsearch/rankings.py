"""Rankings for new models beyond one global sum order (`make_predictor`, `compare_rankings`).

Each method spends exactly n' evaluations per new model. "sum" / "recursive": the paper's step on one order.
"clusterK": k-means (K clusters) on the ranking models' standardised rows (each row centred and scaled: models
group by which samples they solve, not by accuracy), one sum order per cluster (ties broken by the global sums),
plus the global order; a new model is evaluated on the n' uniform positions of the global order, and the DP runs
on those same outcomes laid out in each candidate order (their positions there); the candidate with the best DP
score per sampled item wins. "domain": one threshold per domain (samples carry a domain label): the global order
restricted to each domain, n' split across domains by size, a DP per domain. "clusterK+domain": both, the
candidate order chosen by its total DP score over the domains. "rasch" / "2pl": an item-response model
(`lifelong.sortsearch.irt`) fitted on the ranking rows; samples are ordered by difficulty b_j, a new model is
evaluated on n' uniform positions of that order, its ability theta is the MAP from its outcomes and its row is
predicted as 1[theta > b_j] (P > 1/2). "2pl-dp": the 2PL difficulty order with the DP threshold instead. Rasch
difficulties are a monotone function of column sums, so "rasch" differs from "sum" only by its threshold rule.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from lifelong.sortsearch.irt import fit_irt, irt_abilities
from lifelong.sortsearch.row_metrics import agreement, pearson
from lifelong.sortsearch.search import as_sampled, best_step, dp_threshold, extrapolate, sample_positions, step_scores
from lifelong.sortsearch.sort import descending_order, ranked_positions, sort_by_sum, sort_recursive

RANKING_METHODS = ("sum", "recursive", "cluster2", "cluster4", "domain", "cluster4+domain", "rasch", "2pl", "2pl-dp")


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
        self.rank = ranked_positions(self.order)
        self.name = name

    def sample_ids(self, budget: int) -> np.ndarray:
        return self.order[sample_positions(self.order.size, budget)]

    def thresholds(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        return extrapolate(
            dp_threshold(as_sampled(outcomes)), sample_positions(self.order.size, budget), self.order.size
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
        self.ranks = [ranked_positions(o) for o in orders]
        self.name = f"cluster{k}"
        self.last_choice: np.ndarray | None = None

    def sample_ids(self, budget: int) -> np.ndarray:
        return self.global_order[sample_positions(self.global_order.size, budget)]

    def predict(self, outcomes: np.ndarray, budget: int) -> np.ndarray:
        B = as_sampled(outcomes)
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
        B = as_sampled(outcomes)
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
        B = as_sampled(outcomes)
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
        f"unknown ranking method {method!r}; choose one of {', '.join(RANKING_METHODS)} (or clusterK, clusterK+domain)"
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
