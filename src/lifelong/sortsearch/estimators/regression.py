"""Regression estimators fitted on the source models' full rows (Zhang, Dorner & Hardt 2025, "How benchmark
prediction from fewer data misses the mark"; Rubinstein et al. 2025, "DISCO: Diversifying Sample Condensation").

- `ridge`: the source models' accuracies regressed on their outcomes at the shared random draw (RidgeCV penalty
  by leave-one-out over the source models), applied to each target's outcomes there (Zhang et al.'s
  "Random-Sampling-Learn").
- `ridge-anchors`: the same regression at tinyBenchmarks' k-means anchor items (`tiny.anchor_items`).
- `aipw`: per target, a ridge regression over items of its outcome on the source models' outcomes, fitted on the
  n' random items, predicted at every item; mean prediction plus the mean residual on the n' items.
- `disco`: the n' items of most source-model disagreement (the generalised Jensen-Shannon divergence, with 0/1
  outputs the binary entropy of the share correct), then the paper's PCA + random forest (or ridge) from the
  model signature (its outcomes there) to its accuracy.
- `pca-impute`: the target's row imputed from its n' random outcomes through the source rows' principal
  components (rank chosen on held-out source models); accuracy = mean of observed and imputed cells.

Every estimate is clipped to [0, 1] (which can only lower its error); none of these papers gives an interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.ensemble import RandomForestRegressor

from lifelong.sortsearch.bitmatrix import RowSource
from lifelong.sortsearch.estimators.base import Estimate, EstimationTask, check_observed
from lifelong.sortsearch.estimators.linalg import (
    CHUNK,
    MIN_SOURCES,
    ZOO_ALPHAS,
    check_source,
    fit_on_components,
    fit_ridge,
    principal_components,
    subsample_rows,
)
from lifelong.sortsearch.estimators.tiny import anchor_items


def _row_accuracy(rows: np.ndarray) -> np.ndarray:
    return rows.mean(axis=1, dtype=np.float64)


def _per_sample(n: int, targets: int, block: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """[targets, n] float32 P(correct) clipped to [0, 1], filled `CHUNK` columns at a time by block(start, stop)."""
    out = np.empty((targets, n), np.float32)
    for start in range(0, n, CHUNK):
        stop = min(n, start + CHUNK)
        out[:, start:stop] = np.clip(block(start, stop), 0.0, 1.0)
    return out


@dataclass
class _AccuracyRegressionPlan:
    """Accuracy = a regression of the targets' outcomes on the plan's items (no per-sample predictions)."""

    items: np.ndarray
    predict: Callable[[np.ndarray], np.ndarray]  # [targets, n'] float64 -> [targets]

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items).astype(np.float64)
        return Estimate(np.clip(np.asarray(self.predict(B), np.float64).reshape(-1), 0.0, 1.0))


def _ridge_plan(task: EstimationTask, items: np.ndarray, alphas: Sequence[float]) -> _AccuracyRegressionPlan:
    if not isinstance(task.source, RowSource):
        check_source(task.source)
    fit = fit_ridge(task.columns(items), task.accuracies(), alphas)
    return _AccuracyRegressionPlan(items, lambda B: B @ fit.coef[:, 0] + fit.intercept[0])


class Ridge:
    """Random sample + ridge (Zhang et al. 2025, "Random-Sampling-Learn"): features = a source model's outcomes
    at `task.random_items`, target = its accuracy over all n; penalty among `alphas` (RidgeCV's default 0.1, 1,
    10) of least leave-one-out error over the source models. Cost: O(m n) for the accuracies, O(m n' min(m, n'))
    for the fit, O(m n') memory; runs at the full Lifelong-CIFAR10 shape as is."""

    name = "ridge"
    min_sources = MIN_SOURCES

    def __init__(self, alphas: Sequence[float] = ZOO_ALPHAS) -> None:
        self.alphas = tuple(alphas)

    def plan(self, task: EstimationTask) -> _AccuracyRegressionPlan:
        return _ridge_plan(task, np.asarray(task.random_items, np.int64), self.alphas)


class RidgeAnchors:
    """The `ridge` regression on tinyBenchmarks' k-means anchor items (`tiny.anchor_items`, Vivek et al. 2023 /
    Polo et al. 2024 eq. 2.1) instead of the random draw. Cost: k-means over the n item columns (O(n m n') per
    iteration; `max_items` fits it on that many random items, see `anchor_items`) plus the `ridge` fit."""

    name = "ridge-anchors"
    min_sources = MIN_SOURCES

    def __init__(self, alphas: Sequence[float] = ZOO_ALPHAS, max_items: int | None = None) -> None:
        self.alphas = tuple(alphas)
        self.max_items = max_items

    def plan(self, task: EstimationTask) -> _AccuracyRegressionPlan:
        source = check_source(task.source)
        items, _ = anchor_items(source, task.budget, task.rng(self.name), max_items=self.max_items)
        return _ridge_plan(task, np.asarray(items, np.int64), self.alphas)


@dataclass
class _AIPWPlan:
    items: np.ndarray
    features: np.ndarray  # [feature models, n] 0/1: the source models whose outcomes are an item's features
    feature_accuracy: np.ndarray  # [feature models]: mean of each feature over all n items
    alpha: float
    per_sample: bool

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items).astype(np.float64)
        X = self.features[:, self.items].T.astype(np.float64)  # [n', feature models]
        fit = fit_ridge(X, B.T, (self.alpha,))  # one regression per target, all on the same items
        mean_prediction = self.feature_accuracy @ fit.coef + fit.intercept  # mean over all n items
        residual = B.mean(axis=1) - (X @ fit.coef + fit.intercept).mean(axis=0)  # mean over the n' items
        accuracy = np.clip(mean_prediction + residual, 0.0, 1.0)
        if not self.per_sample:
            return Estimate(accuracy)

        def block(start: int, stop: int) -> np.ndarray:
            return (self.features[:, start:stop].T.astype(np.float64) @ fit.coef + fit.intercept).T

        return Estimate(accuracy, per_sample=_per_sample(self.features.shape[1], B.shape[0], block))


class AIPW:
    """Augmented inverse-probability weighting (Zhang et al. 2025, their `AIPWPred`): per target, a ridge
    regression (penalty `alpha`, 10 as theirs) over items of its outcome on the source models' outcomes at that
    item, fitted on its n' random items; accuracy = mean prediction over all n items + mean residual y - yhat on
    the n' items (equal to their ybar + (1 - n'/n)(mean yhat off the draw - mean yhat on it)). As in their code,
    the ridge's intercept is fitted on the same n' items, so that mean residual is 0 and the estimate is the mean
    prediction (no cross-fitting). per_sample = the predictions. Cost: O(n' m min(n', m)) per estimate's fit,
    O(m) per target for the accuracy (the features' means are the source accuracies), O(n m) per target for the
    per-sample predictions; `max_models` uses that many random source models as features, `per_sample=False`
    skips the [targets, n] predictions (needed at the full shape, where they alone take targets x n x 4 bytes)."""

    name = "aipw"
    min_sources = MIN_SOURCES

    def __init__(self, alpha: float = 10.0, max_models: int | None = None, per_sample: bool = True) -> None:
        self.alpha = float(alpha)
        self.max_models = max_models
        self.per_sample = bool(per_sample)

    def plan(self, task: EstimationTask) -> _AIPWPlan:
        features = subsample_rows(check_source(task.source), self.max_models, task.rng(self.name + "/models"))
        items = np.asarray(task.random_items, np.int64)
        return _AIPWPlan(items, features, _row_accuracy(features), self.alpha, self.per_sample)


def disagreement_order(source: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Items by decreasing source-model disagreement, ties in random order. With 0/1 outputs each model's
    prediction has zero entropy, so DISCO's JSD_i = H(mean prediction) - E_m H(prediction_m) (their
    Proposition 1) is the binary entropy of the share p_i of models correct, which orders items as
    min(c_i, m - c_i), c_i = models correct. (Their PDS is 1 or 2 with 0/1 outputs: too coarse to rank.)"""
    m = source.shape[0]
    correct = source.sum(axis=0, dtype=np.int64)
    return np.lexsort((rng.permutation(correct.size), -np.minimum(correct, m - correct)))


class Disco:
    """DISCO-style selection (Rubinstein et al. 2025): the n' items of highest disagreement among the source
    models (`disagreement_order`), then a predictor from a model's signature (its 0/1 outcomes there) to its
    accuracy, fitted on the source models. `predictor="forest"` is the paper's default (PCA to `dims` = 256
    components, then a random forest; scikit-learn's with `trees` trees, other settings at its defaults: the
    paper does not state them); `predictor="ridge"` is the `ridge` regression on the raw signatures. Cost: O(m n)
    for the selection, O(m^2 n') for the PCA, O(trees m log m dims) for the forest; runs at the full shape."""

    name = "disco"
    min_sources = MIN_SOURCES

    def __init__(
        self, predictor: str = "forest", dims: int = 256, trees: int = 100, alphas: Sequence[float] = ZOO_ALPHAS
    ) -> None:
        if predictor not in ("forest", "ridge"):
            raise ValueError(f"disco's predictor is 'forest' or 'ridge'; got {predictor!r}")
        self.predictor, self.dims, self.trees, self.alphas = predictor, int(dims), int(trees), tuple(alphas)

    def plan(self, task: EstimationTask) -> _AccuracyRegressionPlan:
        source = check_source(task.source)
        rng = task.rng(self.name)
        items = np.sort(disagreement_order(source, rng)[: task.budget]).astype(np.int64)
        if self.predictor == "ridge":
            return _ridge_plan(task, items, self.alphas)
        signatures = source[:, items]
        mean, components, _ = principal_components(signatures, self.dims)
        forest = RandomForestRegressor(n_estimators=self.trees, random_state=int(rng.integers(2**31 - 1)))
        forest.fit((signatures - mean) @ components.T, _row_accuracy(source))
        return _AccuracyRegressionPlan(items, lambda B: forest.predict((B - mean) @ components.T))


@dataclass
class _ImputePlan:
    items: np.ndarray
    mean: np.ndarray  # [n]
    components: np.ndarray  # [k, n]

    def estimate(self, observed: np.ndarray) -> Estimate:
        B = check_observed(observed, self.items).astype(np.float64)
        Z = fit_on_components(B, self.items, self.mean, self.components)
        accuracy = np.clip(imputed_accuracy(B, Z, self.items, self.mean, self.components), 0.0, 1.0)
        seen = np.zeros(self.mean.size, bool)
        seen[self.items] = True
        where = np.full(self.mean.size, -1)
        where[self.items] = np.arange(self.items.size)

        def block(start: int, stop: int) -> np.ndarray:
            rows = self.mean[start:stop] + Z @ self.components[:, start:stop]
            cols = np.flatnonzero(seen[start:stop])
            rows[:, cols] = B[:, where[start + cols]]
            return rows

        return Estimate(accuracy, per_sample=_per_sample(self.mean.size, B.shape[0], block))


def imputed_accuracy(
    B: np.ndarray, Z: np.ndarray, items: np.ndarray, mean: np.ndarray, components: np.ndarray
) -> np.ndarray:
    """Mean over all n cells of rows observed as B on `items` and imputed as mean + Z components elsewhere."""
    n = mean.size
    off_mean = mean.sum() - mean[items].sum()
    off_components = components.sum(axis=1) - components[:, items].sum(axis=1)
    return (B.sum(axis=1) + off_mean + Z @ off_components) / n


class PCAImpute:
    """PCA imputation (Zhang et al. 2025, their `PCAPred`): the target's row, observed at `task.random_items`,
    completed through the source rows' top-k principal components (least squares on the observed cells: the
    fixed point of their iterative PCA imputation with the components held); accuracy = mean of observed and
    imputed cells, per_sample = the completed row. k among `ranks` (theirs: 2, 5, 10, 20) by the mean absolute
    accuracy error on a `holdout` share (0.25, theirs) of source models, components fitted on the rest. Cost:
    O(m^2 n) time and O(m^2 + k n) memory for the components (twice), O(n' k^2 + n k) per target; at the full
    shape pass `max_models` (the components are fitted on that many random source models)."""

    name = "pca-impute"
    min_sources = MIN_SOURCES

    def __init__(
        self,
        ranks: Sequence[int] = (2, 5, 10, 20),
        holdout: float = 0.25,
        rank: int | None = None,
        max_models: int | None = None,
    ) -> None:
        if rank is None and (not ranks or min(ranks) < 1):
            raise ValueError(f"pca-impute's candidate ranks must be positive; got {list(ranks)}")
        if not 0 < holdout < 1:
            raise ValueError(f"pca-impute's holdout share must be between 0 and 1; got {holdout}")
        self.ranks, self.holdout, self.rank, self.max_models = tuple(ranks), float(holdout), rank, max_models

    def choose_rank(self, rows: np.ndarray, items: np.ndarray, rng: np.random.Generator) -> tuple[int, dict]:
        """(rank, {rank: mean absolute accuracy error on the held-out source models})."""
        m = rows.shape[0]
        perm = rng.permutation(m)
        held = min(m - 2, max(1, round(self.holdout * m)))
        if held < 1:  # 2 source models: nothing to hold out
            return max(1, min(min(self.ranks), items.size, m - 1)), {}
        val, train = rows[perm[:held]], rows[perm[held:]]
        mean, components, _ = principal_components(train, max(self.ranks))
        truth = _row_accuracy(val)
        B = val[:, items].astype(np.float64)
        errors = {}
        for k in sorted({max(1, min(r, items.size, components.shape[0])) for r in self.ranks}):
            Z = fit_on_components(B, items, mean, components[:k])
            errors[k] = float(np.mean(np.abs(imputed_accuracy(B, Z, items, mean, components[:k]) - truth)))
        return min(errors, key=errors.__getitem__), errors

    def plan(self, task: EstimationTask) -> _ImputePlan:
        rows = subsample_rows(check_source(task.source), self.max_models, task.rng(self.name + "/models"))
        items = np.asarray(task.random_items, np.int64)
        k = self.rank if self.rank is not None else self.choose_rank(rows, items, task.rng(self.name))[0]
        mean, components, _ = principal_components(rows, k)
        return _ImputePlan(items, mean, components)
