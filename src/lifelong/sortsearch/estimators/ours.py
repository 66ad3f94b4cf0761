"""`lifelong`: the toolkit's estimator of a new model's accuracy from its outcomes on n' samples.

Design (chosen on synthetic matrices and on development seeds 100-104 of the zoo, which the reported comparison,
seeds 0-9, does not use):
1. Anchors. The n' samples are k-means anchor points of the samples' columns of the source rows (as
   tinyBenchmarks' `anchor-points`, `tiny.anchor_clusters`, one k-means++ run): samples the source models get
   right and wrong together form a cluster; each cluster is evaluated at the sample nearest its centre and
   weighs its share of the n samples. The weighted mean of a target's n' outcomes is a design estimate that
   needs no regression and holds for targets unlike the sources.
2. A ridge correction shrunk toward that design: a source model's accuracy minus its weighted anchor mean is
   regressed (ridge with an intercept, penalty by leave-one-out over the source models) on its n' outcomes, and
   the estimate is the weighted mean plus the predicted correction. Where the sources say the outcomes predict
   more than the weights do (interpolation), the correction learns it; a heavy penalty leaves the design
   estimate, so a target more accurate than every source (extrapolation) falls back to anchor points rather
   than to the sources' mean, which is where plain ridge on anchors fails (development seeds: error 2.0 vs 4.3
   points at n' = 100, and 1.7 vs 1.7 on interpolation).
3. The 95% interval: +- the 95th percentile of the absolute cross-fitted errors over the source models: the
   sources are cut into `folds`; the anchors and the regression are refitted without each fold and its models
   are estimated from their outcomes on those anchors. (Leave-one-out errors with the anchors chosen on all
   sources cover only about 88%: the anchors fit the models they were chosen on.) A target whose design estimate
   lies beyond the 5th-95th percentiles of the sources' gets at least the design's own interval: 1.96 x the
   weighted anchor mean's standard error, each cluster's variance the sources' mean p (1 - p) within it. With
   fewer than `MIN_MODELS` sources there is no regression: the design estimate with that interval.
Per-sample probabilities: every sample takes the outcome at its cluster's anchor, shifted so that their mean is
the estimate (clipped to [0, 1]).
Scale: k-means runs on at most `max_items` random samples' columns of at most `max_models` random source rows
(cluster shares then estimated on those samples), so its memory is bounded whatever n; the regression reads
the n' columns of every source row, and `task.accuracies()` streams packed rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from lifelong.sortsearch.estimators.base import Estimate, EstimationTask, check_observed, wants_per_sample
from lifelong.sortsearch.estimators.linalg import RidgeFit, fit_ridge, subsample_indices
from lifelong.sortsearch.estimators.tiny import Anchors, anchor_clusters

ALPHAS = tuple(float(a) for a in np.logspace(-3, 4, 15))  # ridge penalties tried by leave-one-out
Z95 = NormalDist().inv_cdf(0.975)
MIN_MODELS = 10  # source models below which there is no regression (the design estimate alone)
INSIDE = 0.95  # targets whose design estimate lies beyond these quantiles of the sources' get the design's interval


@dataclass(frozen=True)
class AnchorRegression:
    """The design weights and the ridge correction fitted on source rows' outcomes at the anchors."""

    weights: np.ndarray  # [n'] cluster shares (sum 1)
    correction: RidgeFit | None  # None without enough source models

    def predict(self, B: np.ndarray) -> np.ndarray:
        design = B @ self.weights
        return design if self.correction is None else design + self.correction.predict(B)


def fit_anchor_regression(X: np.ndarray, accuracy: np.ndarray, weights: np.ndarray) -> AnchorRegression:
    """Ridge of (accuracy - weighted anchor mean) on the anchor outcomes X [models, n'] (module docstring, 2)."""
    X = np.asarray(X, np.float64)
    if X.shape[0] < MIN_MODELS:
        return AnchorRegression(weights, None)
    return AnchorRegression(weights, fit_ridge(X, accuracy - X @ weights, ALPHAS))


@dataclass
class AnchorPlan:
    """`lifelong`'s fitted plan: the anchors every target is evaluated on and what turns outcomes into estimates."""

    items: np.ndarray  # [n'] the anchors
    model: AnchorRegression
    half: float | None  # the interval's half-width (95th percentile of cross-fitted errors), None: design's
    inside: tuple[float, float]  # 5th and 95th percentiles of the source models' design estimates
    within: np.ndarray  # [n'] the sources' mean within-cluster variance of outcomes (the design's error)
    labels: np.ndarray | None  # [n] every sample's anchor (index into items), None when k-means saw a subsample

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The plan as plain arrays (np.savez without pickles); `from_arrays` inverts it."""
        out = {"items": self.items, "weights": self.model.weights, "within": self.within}
        out["floats"] = np.array([np.nan if self.half is None else self.half, *self.inside])
        if self.model.correction is not None:
            fit = self.model.correction
            out.update(coef=fit.coef, intercept=fit.intercept, alpha=np.array(fit.alpha))
        if self.labels is not None:
            out["labels"] = self.labels
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> AnchorPlan:
        """The plan `to_arrays` wrote (KeyError / ValueError when they are not one)."""
        items, weights, within = (np.asarray(arrays[k]) for k in ("items", "weights", "within"))
        half, low, high = (float(v) for v in arrays["floats"])
        correction = None
        if "coef" in arrays:
            coef, intercept = np.asarray(arrays["coef"], np.float64), np.asarray(arrays["intercept"], np.float64)
            if coef.shape != (items.size, 1) or intercept.shape != (1,):
                raise ValueError(f"a plan's coefficients have shape {coef.shape} for {items.size} items")
            correction = RidgeFit(coef, intercept, float(arrays["alpha"]))
        labels = np.asarray(arrays["labels"], np.int64) if "labels" in arrays else None
        if weights.shape != items.shape or within.shape != items.shape:
            raise ValueError(f"a plan's weights and variances must have one entry per item ({items.size})")
        model = AnchorRegression(weights.astype(np.float64), correction)
        return cls(items.astype(np.int64), model, None if np.isnan(half) else half, (low, high), within, labels)

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items).astype(np.float64)
        accuracy = np.clip(self.model.predict(B), 0.0, 1.0)
        design = B @ self.model.weights
        design_half = Z95 * float(np.sqrt(self.model.weights**2 @ self.within))
        if self.half is None:
            half = np.full(accuracy.shape, design_half)
        else:  # beyond the sources' designs the regression's errors say little: at least the design's own
            beyond = (design < self.inside[0]) | (design > self.inside[1])
            half = np.where(beyond, max(self.half, design_half), self.half)
        low, high = np.clip(accuracy - half, 0, 1), np.clip(accuracy + half, 0, 1)
        if self.labels is None or not wants_per_sample(B.shape[0], self.labels.size):
            return Estimate(accuracy, low, high)
        per_sample = B[:, self.labels] + (accuracy - design)[:, None]
        return Estimate(accuracy, low, high, np.clip(per_sample, 0, 1).astype(np.float32))


class Lifelong:
    """The toolkit's estimator (module docstring). `folds`: cross-fitting folds of the source models for the
    interval; `max_items` / `max_models`: the samples and source rows k-means sees at most."""

    name = "lifelong"

    def __init__(self, folds: int = 5, max_items: int = 32_000, max_models: int = 1_000) -> None:
        if int(folds) < 2:
            raise ValueError(f"folds must be at least 2; got {folds}")
        if int(max_items) < 1 or int(max_models) < 1:
            raise ValueError(f"max_items and max_models must be positive; got {max_items}, {max_models}")
        self.folds, self.max_items, self.max_models = int(folds), int(max_items), int(max_models)

    def _anchors(self, block: np.ndarray, rows: np.ndarray, budget: int, rng: np.random.Generator) -> Anchors:
        """k-means anchors (indices into the block's columns) from at most `max_models` of the given rows."""
        rows = rows[subsample_indices(rows.size, self.max_models, rng)]
        return anchor_clusters(block[rows], budget, rng, max_items=None, max_models=None, trials=1)

    def plan(self, task: EstimationTask) -> AnchorPlan:
        rng = task.rng(self.name)
        n, m = task.n, task.source.shape[0]
        pool = subsample_indices(n, self.max_items, rng)  # all n samples unless n > max_items
        block = task.columns(pool)  # [m, pool] uint8: the only dense read of the source
        accuracy = task.accuracies()
        everyone = np.arange(m)
        anchors = self._anchors(block, everyone, task.budget, rng)
        X = block[:, anchors.items].astype(np.float64)
        model = fit_anchor_regression(X, accuracy, anchors.weights)
        half = None
        if model.correction is not None:
            fold = rng.permutation(m) % self.folds
            errors = np.empty(m)
            for f in range(self.folds):
                held = fold == f
                refit = self._anchors(block, everyone[~held], task.budget, rng)
                columns = block[:, refit.items].astype(np.float64)
                fitted = fit_anchor_regression(columns[~held], accuracy[~held], refit.weights)
                errors[held] = fitted.predict(columns[held]) - accuracy[held]
            half = float(np.quantile(np.abs(errors), 0.95))
        labels = anchors.labels if pool.size == n else None
        inside = tuple(float(q) for q in np.quantile(X @ anchors.weights, [1 - INSIDE, INSIDE]))
        return AnchorPlan(pool[anchors.items], model, half, inside, _within_variance(block, anchors), labels)


def _within_variance(block: np.ndarray, anchors: Anchors, chunk: int = 1024) -> np.ndarray:
    """[k] per cluster: the source models' mean variance of their outcomes over the cluster's samples, p (1 - p)
    with p a model's share correct in the cluster (what one sample of the cluster leaves unknown)."""
    k = anchors.items.size
    counts = np.bincount(anchors.labels, minlength=k)
    order = np.argsort(anchors.labels, kind="stable")
    present = np.flatnonzero(counts)
    starts = np.r_[0, np.cumsum(counts[present])[:-1]]
    total = np.zeros(k)
    for start in range(0, block.shape[0], chunk):  # row chunks: memory O(chunk x samples), whatever the models
        sums = np.add.reduceat(block[start : start + chunk][:, order], starts, axis=1, dtype=np.int64)
        share = sums / counts[present]
        total[present] += (share * (1.0 - share)).sum(axis=0)
    return total / block.shape[0]
