"""The plain estimators: a sample mean of random or difficulty-stratified samples, and Sort & Search's own k/n.

- `random-mean`: the share correct among the seed's shared random draw of n' samples; 95% Wilson score
  interval with the finite-population correction (`intervals.accuracy_interval(method="binomial")`).
- `stratified-mean`: samples ordered by the source models' column sums (easiest first, `sort.sort_by_sum`),
  one sample at the middle of each of n' equal strata of that order (`search.sample_positions("uniform")`);
  its mean, with the systematic sample's successive-difference interval of the outcomes along the order.
- `sort-search`: the paper's estimate, k/n with k the DP threshold on the same stratified samples, extrapolated
  (`search.dp_threshold`, `search.extrapolate`); per-sample predictions are the step (1 before k, 0 after). The
  paper gives it no interval (the store's interval belongs to its corrected estimate, see `lifelong`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lifelong.sortsearch.estimators.base import Estimate, EstimationTask, check_observed, wants_per_sample
from lifelong.sortsearch.intervals import _z, accuracy_interval
from lifelong.sortsearch.search import dp_threshold, extrapolate, sample_positions
from lifelong.sortsearch.sort import sort_by_sum


def stratified_items(task: EstimationTask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, positions, items): the source models' easiest-first order, the n' stratum midpoints in it, and
    the sample ids there (in order of position)."""
    order = sort_by_sum(task.source).astype(np.int64)
    positions = sample_positions(task.n, task.budget, "uniform")
    return order, positions, order[positions]


@dataclass
class _MeanPlan:
    items: np.ndarray
    n: int
    systematic: bool

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items)
        mean = B.mean(axis=1, dtype=np.float64)
        r = B.shape[1]
        fpc = max(0.0, 1.0 - r / self.n)
        if not self.systematic:
            interval = accuracy_interval(B, np.arange(r), max(self.n, r), method="binomial", sampling="random")
            return Estimate(mean, interval.low, interval.high)
        floor = 1.0 / (r + 1.5)  # Jeffreys floor, as the store's intervals
        d = np.diff(B.astype(np.float64), axis=1)
        per_item = np.maximum((d * d).sum(axis=1) / (2 * max(1, r - 1)), floor)
        half = _z(0.95) * np.sqrt(fpc * per_item / r)
        return Estimate(mean, np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1))


class RandomMean:
    name = "random-mean"

    def plan(self, task: EstimationTask) -> _MeanPlan:
        return _MeanPlan(np.asarray(task.random_items, np.int64), task.n, systematic=False)


class StratifiedMean:
    name = "stratified-mean"

    def plan(self, task: EstimationTask) -> _MeanPlan:
        _, _, items = stratified_items(task)
        return _MeanPlan(items, task.n, systematic=True)


@dataclass
class _StepPlan:
    items: np.ndarray
    order: np.ndarray
    positions: np.ndarray

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items)
        n = self.order.size
        k = np.atleast_1d(extrapolate(dp_threshold(B), self.positions, n))
        if not wants_per_sample(B.shape[0], n):
            return Estimate(k / n)
        per_sample = np.zeros((B.shape[0], n), np.float32)
        rank = np.empty(n, np.int64)
        rank[self.order] = np.arange(n)
        per_sample[:] = rank[None, :] < k[:, None]
        return Estimate(k / n, per_sample=per_sample)


class SortSearch:
    name = "sort-search"

    def plan(self, task: EstimationTask) -> _StepPlan:
        order, positions, items = stratified_items(task)
        return _StepPlan(items, order, positions)
