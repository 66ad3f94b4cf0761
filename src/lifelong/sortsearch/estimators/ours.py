"""`lifelong`: the toolkit's estimator of a new model's accuracy from its outcomes on n' samples.

Design (chosen on synthetic matrices and on development seeds 100-104 of the zoo, which the reported comparison,
seeds 0-9, does not use):
1. Stratified samples. Samples are grouped by domain (e.g. a corruption at a severity, when the samples' domains
   are known) and each domain gets n' samples in proportion to its size, one at the middle of each equal slice
   of its own difficulty order (source models' column sums, easiest first, ties by `sort.tie_keys`): a
   systematic sample of every domain. Without domains, or with fewer than 4 samples per domain, `bins` equal
   slices of the whole difficulty order (at most n'/4) stand for the domains.
2. Inside the sources: a model's accuracy over all samples regressed (ridge, penalty by leave-one-out over the
   source models) on its n' outcomes, as the strongest published baseline does on random samples (Zhang, Dorner
   and Hardt 2025), here on the stratified ones. It serves targets whose mean on the n' samples lies between the
   10th and 90th percentiles of the source models' means on them.
3. Outside (a model more, or less, accurate than the sources), a regression fitted on the sources extrapolates
   badly (measured: ridge's error grows to 1.6 x the random-sample mean's), so the estimate is the design's own:
   the mean of the self-weighting stratified sample.
4. The 95% interval: inside, +- the 95th percentile of the regression's absolute leave-one-out errors over the
   source models (a percentile, not 1.96 x their RMS: a few broken source models have very large errors), at
   least the design's; outside, the design's: 1.96 standard errors of the stratified mean by successive
   differences along the strata (the systematic sample's estimator), finite-population corrected.
Per-sample probabilities: each stratum's observed share of correct outcomes, shifted so that their mean is the
estimate (clipped to [0, 1]).
Cost: the n column sums and a sort per domain (O(m n + n log n)), a ridge fit on [m, n'] (O(m n'^2)), O(n) per
target for the per-sample probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from lifelong.sortsearch.estimators.base import Estimate, EstimationTask, check_observed, wants_per_sample
from lifelong.sortsearch.estimators.linalg import RidgeFit, fit_ridge
from lifelong.sortsearch.sort import descending_order

ALPHAS = tuple(float(a) for a in np.logspace(-3, 4, 15))  # ridge penalties tried by leave-one-out
Z95 = NormalDist().inv_cdf(0.975)
MIN_PER_DOMAIN = 4  # samples per domain below which difficulty slices stand for the domains
INSIDE = 0.9  # the regression serves targets whose sample mean lies between these quantiles of the sources' means


def stratified_sample(sums: np.ndarray, groups: np.ndarray | None, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """(items, stratum of each item): n' samples over the groups in proportion to their sizes (largest remainders),
    each group's k at the middles of k equal slices of its own easiest-first order. Without groups: one group."""
    n = sums.size
    groups = np.zeros(n, np.int64) if groups is None else np.asarray(groups)
    names, group_of = np.unique(groups, return_inverse=True)
    sizes = np.bincount(group_of, minlength=names.size)
    share = budget * sizes / n
    take = np.floor(share).astype(np.int64)
    take[np.argsort(-(share - take), kind="stable")[: budget - int(take.sum())]] += 1
    items, strata = [], []
    for g in np.flatnonzero(take):
        ids = np.flatnonzero(group_of == g)
        order = ids[descending_order(sums[ids])]
        k = int(take[g])
        items.append(order[(2 * np.arange(k) + 1) * ids.size // (2 * k)])
        strata.append(np.full(k, g))
    return np.concatenate(items), np.concatenate(strata)


def _difficulty_bins(sums: np.ndarray, bins: int) -> np.ndarray:
    """Each sample's slice of the easiest-first order cut into `bins` equal parts."""
    rank = np.empty(sums.size, np.int64)
    rank[descending_order(sums)] = np.arange(sums.size)
    return rank * bins // sums.size


@dataclass
class _Plan:
    items: np.ndarray
    strata: np.ndarray  # [n'] the stratum of each item
    regression: RidgeFit
    regression_half: float  # 95th percentile of its absolute leave-one-out errors over the source models
    inside: tuple[float, float]  # quantiles of the source models' own means on the plan's samples
    n: int
    stratum_of_sample: np.ndarray  # [n] every sample's stratum

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items).astype(np.float64)
        design, design_se = self._design_estimate(B)
        inside = (design > self.inside[0]) & (design < self.inside[1])
        accuracy = np.clip(np.where(inside, self.regression.predict(B), design), 0.0, 1.0)
        half = np.where(inside, np.maximum(self.regression_half, Z95 * design_se), Z95 * design_se)
        low, high = np.clip(accuracy - half, 0, 1), np.clip(accuracy + half, 0, 1)
        if not wants_per_sample(B.shape[0], self.n):
            return Estimate(accuracy, low, high)
        strata = np.unique(self.strata)
        shares = np.stack([B[:, self.strata == s].mean(axis=1) for s in strata], axis=1)  # [t, strata]
        per_sample = shares[:, np.searchsorted(strata, self.stratum_of_sample)]
        per_sample = per_sample + (accuracy - per_sample.mean(axis=1))[:, None]
        return Estimate(accuracy, low, high, np.clip(per_sample, 0, 1).astype(np.float32))

    def _design_estimate(self, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The self-weighting stratified sample's mean and its standard error: successive differences along the
        items' order (stratum, then difficulty), the systematic sample's variance estimator, with the
        finite-population correction and a floor of a quarter over n' + 3/2 (never a zero-width interval)."""
        r = B.shape[1]
        mean = B.mean(axis=1)
        if r < 2:
            return mean, np.full(mean.shape, 0.5)
        d = np.diff(B, axis=1)
        per_item = np.maximum((d * d).sum(axis=1) / (2 * (r - 1)), 1.0 / (4 * (r + 1.5)))
        return mean, np.sqrt(max(0.0, 1.0 - r / self.n) * per_item / r)


class Lifelong:
    """The toolkit's estimator (module docstring). `bins`: difficulty slices that stand for domains when the
    samples have none (or too few samples per domain)."""

    name = "lifelong"

    def __init__(self, bins: int = 8) -> None:
        if int(bins) < 1:
            raise ValueError(f"bins must be at least 1; got {bins}")
        self.bins = int(bins)
        self._sums: tuple[np.ndarray, np.ndarray] | None = None

    def _column_sums(self, task: EstimationTask) -> np.ndarray:
        """The source's column sums, computed once for every budget a source is planned at."""
        if self._sums is None or self._sums[0] is not task.source:  # held: the same object means the same rows
            self._sums = (task.source, task.column_sums())
        return self._sums[1]

    def plan(self, task: EstimationTask) -> _Plan:
        sums = self._column_sums(task)
        groups = task.groups
        if groups is None or np.unique(groups).size * MIN_PER_DOMAIN > task.budget:  # too few per domain: slices
            groups = _difficulty_bins(sums, max(1, min(self.bins, task.budget // MIN_PER_DOMAIN)))
        items, strata = stratified_sample(sums, groups, task.budget)
        X = task.columns(items).astype(np.float64)
        regression = fit_ridge(X, task.accuracies(), ALPHAS)
        means = X.mean(axis=1)
        group_of = np.unique(np.asarray(groups), return_inverse=True)[1]
        return _Plan(
            items,
            strata,
            regression,
            float(np.quantile(np.abs(regression.loo_residuals), 0.95)),
            (float(np.quantile(means, 1 - INSIDE)), float(np.quantile(means, INSIDE))),
            task.n,
            np.where(np.isin(group_of, strata), group_of, strata[0]),
        )
