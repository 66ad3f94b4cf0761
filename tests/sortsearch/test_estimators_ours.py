"""`lifelong`, the toolkit's estimator: anchors, the ridge correction shrunk toward the design, the cross-fitted
interval, per-sample probabilities, the scale path; each against an independent computation."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from lifelong.sortsearch.bitmatrix import PackedRows
from lifelong.sortsearch.estimators import ours
from lifelong.sortsearch.estimators.base import EstimationTask
from lifelong.sortsearch.estimators.ours import Lifelong, fit_anchor_regression
from lifelong.sortsearch.estimators.tiny import anchor_clusters, anchor_items


def planted(m: int = 120, n: int = 2000, seed: int = 0, slope: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1, m), rng.normal(0, 1.5, n)
    return (rng.random((m, n)) < 1 / (1 + np.exp(-slope * (theta[:, None] - b[None, :])))).astype(np.uint8)


A = planted()


def test_anchor_clusters_label_every_sample_and_weigh_clusters_by_their_share():
    found = anchor_clusters(A[:80], 25, np.random.default_rng(0), trials=1)
    assert found.labels.shape == (A.shape[1],) and found.labels.max() < 25
    assert np.allclose(found.weights, np.bincount(found.labels, minlength=25) / A.shape[1])
    assert len(set(found.items.tolist())) == 25
    items, weights = anchor_items(A[:80], 25, np.random.default_rng(0))  # the paper's 5 runs: same contract
    assert items.size == 25 and weights.sum() == pytest.approx(1.0)


def test_the_correction_is_a_ridge_of_the_accuracy_left_by_the_weighted_mean():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, (60, 12)).astype(float)
    w = rng.dirichlet(np.ones(12))
    y = X @ w + 0.05 * X[:, 0] - 0.02 * X[:, 3] + rng.normal(0, 0.01, 60)
    model = fit_anchor_regression(X, y, w)
    reference = Ridge(alpha=model.correction.alpha).fit(X, y - X @ w)  # sklearn: the same penalised objective
    assert np.allclose(model.correction.coef[:, 0], reference.coef_, atol=1e-8)
    assert np.allclose(model.predict(X[:5]), X[:5] @ w + reference.predict(X[:5]), atol=1e-10)


def test_a_heavy_penalty_leaves_the_design_estimate_and_few_sources_give_it_alone(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.integers(0, 2, (40, 8)).astype(float)
    w = np.full(8, 1 / 8)
    y = X @ w + rng.normal(0, 0.05, 40)
    monkeypatch.setattr(ours, "ALPHAS", (1e12,))
    heavy = fit_anchor_regression(X, y, w)
    assert np.allclose(heavy.predict(X), X @ w + (y - X @ w).mean(), atol=1e-6)  # only the intercept is left
    few = fit_anchor_regression(X[: ours.MIN_MODELS - 1], y[: ours.MIN_MODELS - 1], w)
    assert few.correction is None and np.allclose(few.predict(X), X @ w)


def test_the_interval_is_the_95th_percentile_of_errors_refitted_without_each_fold():
    task = EstimationTask(A[:60], 30, seed=4)
    plan = Lifelong(folds=3).plan(task)
    # the same draws, by hand: pool (all samples), anchors on all rows, then per fold anchors + fit without it
    rng = task.rng("lifelong")
    est = Lifelong(folds=3)
    pool = np.arange(A.shape[1])
    anchors = est._anchors(A[:60], np.arange(60), 30, rng)
    assert np.array_equal(plan.items, pool[anchors.items])
    fold = rng.permutation(60) % 3
    errors = np.empty(60)
    y = A[:60].mean(axis=1)
    for f in range(3):
        held = fold == f
        refit = est._anchors(A[:60], np.flatnonzero(~held), 30, rng)
        X = A[:60][:, refit.items].astype(float)
        reference = Ridge(alpha=fit_anchor_regression(X[~held], y[~held], refit.weights).correction.alpha)
        reference.fit(X[~held], y[~held] - X[~held] @ refit.weights)
        errors[held] = X[held] @ refit.weights + reference.predict(X[held]) - y[held]
    assert plan.half == pytest.approx(np.quantile(np.abs(errors), 0.95), rel=1e-8)


def test_targets_are_estimated_well_and_intervals_cover_held_out_models():
    task = EstimationTask(A[:90], 60, seed=0)
    plan = Lifelong().plan(task)
    est = plan.estimate(A[90:][:, plan.items])
    truth = A[90:].mean(axis=1)
    random_error = np.abs(A[90:][:, task.random_items].mean(axis=1) - truth).mean()
    assert np.abs(est.accuracy - truth).mean() < random_error
    assert ((est.low <= truth) & (truth <= est.high)).mean() >= 0.8


def test_per_sample_probabilities_are_the_anchor_outcome_of_each_cluster_shifted_to_the_estimate():
    plan = Lifelong().plan(EstimationTask(A[:90], 40, seed=1))
    B = A[90:93][:, plan.items]
    est = plan.estimate(B)
    labels = plan.labels
    for t in range(3):
        shift = est.accuracy[t] - B[t] @ plan.model.weights
        assert np.allclose(est.per_sample[t], np.clip(B[t][labels] + shift, 0, 1), atol=1e-6)


def test_within_cluster_variance_matches_a_loop():
    found = anchor_clusters(A[:50], 10, np.random.default_rng(3), trials=1)
    got = ours._within_variance(A[:50], found, chunk=7)
    for c in range(10):
        p = A[:50][:, found.labels == c].mean(axis=1)
        assert got[c] == pytest.approx((p * (1 - p)).mean())


def test_every_sample_evaluated_gives_the_exact_accuracy():
    small = planted(m=30, n=60, seed=5)
    plan = Lifelong().plan(EstimationTask(small[:20], 60))
    est = plan.estimate(small[20:][:, plan.items])
    assert np.allclose(est.accuracy, small[20:].mean(axis=1))


def test_packed_rows_and_a_sample_pool_give_the_dense_plan():
    packed = PackedRows(np.packbits(A[:70], axis=1), A.shape[1])
    small = Lifelong(max_items=500, max_models=40)
    dense_plan = small.plan(EstimationTask(A[:70], 20, seed=2))
    packed_plan = small.plan(EstimationTask(packed, 20, seed=2))
    assert np.array_equal(dense_plan.items, packed_plan.items) and dense_plan.half == packed_plan.half
    assert dense_plan.labels is None  # k-means saw 500 of the 2,000 samples: no per-sample probabilities
    est = dense_plan.estimate(A[70:][:, dense_plan.items])
    assert est.per_sample is None and np.all((est.low <= est.accuracy) & (est.accuracy <= est.high))


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="folds"):
        Lifelong(folds=1)
    with pytest.raises(ValueError, match="max_items"):
        Lifelong(max_items=0)


def test_targets_beyond_the_sources_designs_get_at_least_the_designs_own_interval():
    plan = Lifelong().plan(EstimationTask(A[:90], 40, seed=1))
    design_half = ours.Z95 * np.sqrt(plan.model.weights**2 @ plan.within)
    assert design_half > plan.half  # this matrix: the design's interval is the wider one
    beyond = np.ones((1, 40), np.uint8)  # every anchor right: beyond every source model's design estimate
    est = plan.estimate(beyond)
    assert est.accuracy[0] - est.low[0] == pytest.approx(min(design_half, est.accuracy[0]))
    designs = A[:90][:, plan.items] @ plan.model.weights
    typical = A[:90][[int(np.argsort(designs)[45])]][:, plan.items]  # a median source model
    est = plan.estimate(typical)
    assert est.high[0] - est.accuracy[0] == pytest.approx(plan.half)


def test_a_plan_written_as_arrays_reads_back_the_same_estimates():
    plan = Lifelong().plan(EstimationTask(A[:90], 40, seed=1))
    again = type(plan).from_arrays({k: np.array(v) for k, v in plan.to_arrays().items()})
    B = A[90:][:, plan.items]
    first, second = plan.estimate(B), again.estimate(B)
    for field in ("accuracy", "low", "high", "per_sample"):
        assert np.array_equal(getattr(first, field), getattr(second, field))
    broken = plan.to_arrays() | {"coef": np.zeros((3, 1))}
    with pytest.raises(ValueError, match="coefficients"):
        type(plan).from_arrays(broken)
