"""tinyBenchmarks estimators (anchor points, IRT, p-IRT, gp-IRT) against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from lifelong.sortsearch.estimators.base import EstimationTask, estimator
from lifelong.sortsearch.estimators.irt_multi import choose_dimension, fit_items, mirt_abilities
from lifelong.sortsearch.estimators.tiny import (
    GPIRT,
    PIRT,
    AnchorPoints,
    IRTEstimator,
    IRTModel,
    _IRTPlan,
    anchor_items,
)

FAST = {"dims": (1, 2)}


def planted(models: int, samples: int, seed: int) -> np.ndarray:
    """A 1-D item-response matrix: theta ~ N(0, 1), b ~ N(0, 1.5), P = sigmoid(theta - b)."""
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=models), rng.normal(0, 1.5, size=samples)
    return (rng.random((models, samples)) < 1 / (1 + np.exp(-(theta[:, None] - b)))).astype(np.uint8)


def test_anchor_items_find_planted_clusters_and_weigh_them_by_size():
    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 2, size=(40, 3)).astype(np.uint8)  # 3 distinct item columns over 40 models
    sizes = np.array([50, 30, 20])
    members = np.repeat(np.arange(3), sizes)
    source = patterns[:, members]
    source[rng.integers(0, 40, 10), rng.integers(0, 100, 10)] ^= 1  # a little noise: many distinct columns
    items, weights = anchor_items(source, 3, np.random.default_rng(1))
    assert sorted(members[items]) == [0, 1, 2]
    np.testing.assert_allclose(weights, sizes[members[items]] / 100, atol=0.03)
    assert weights.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("budget", [5, 37, 60])
def test_anchor_items_with_few_distinct_items_split_groups_and_stay_distinct(budget):
    source = np.tile(np.array([[0, 1, 1, 0, 1], [1, 1, 0, 0, 1]], np.uint8), (1, 12))  # 4 distinct of 60
    items, weights = anchor_items(source, budget, np.random.default_rng(0))
    assert len(np.unique(items)) == budget and weights.sum() == pytest.approx(1.0)
    key = source[0, items] * 2 + source[1, items]
    for k in np.unique(key):  # each group of identical items keeps its share of n
        assert weights[key == k].sum() == pytest.approx((source[0] * 2 + source[1] == k).mean())


def test_anchor_points_are_exact_at_the_full_budget():
    Y = planted(30, 80, 3)
    task = EstimationTask(Y[:20], 80)
    plan = AnchorPoints().plan(task)
    est = plan.estimate(Y[20:, plan.items])
    np.testing.assert_allclose(est.accuracy, Y[20:].mean(axis=1))
    assert est.low is None and est.per_sample is None


def test_item_step_matches_scikit_learn_logistic_regression():
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(200, 2))
    Y = (rng.random((200, 5)) < 1 / (1 + np.exp(-(theta @ rng.normal(size=(2, 5)) + 0.3)))).astype(np.uint8)
    A, b = fit_items(Y, theta, prior_a=1.0, prior_b=1e4, iters=50)
    for j in range(5):  # sklearn: 0.5 |w|^2 + sum log-loss, intercept unpenalised = prior_a 1, flat prior on b
        ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=1000).fit(theta, Y[:, j])
        np.testing.assert_allclose(A[j], ref.coef_[0], atol=1e-4)
        assert -b[j] == pytest.approx(ref.intercept_[0], abs=1e-4)


def test_abilities_are_the_maximum_likelihood_of_scipy():
    rng = np.random.default_rng(5)
    A, b = rng.normal(size=(60, 2)), rng.normal(size=60)
    Y = (rng.random((3, 60)) < 0.6).astype(np.uint8)
    theta = mirt_abilities(Y, A, b)
    for row, t in zip(Y, theta, strict=True):

        def nll(x, row=row):
            z = A @ x - b
            return float(np.sum(np.logaddexp(0, z) - row * z))

        ref = minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-9}).x
        np.testing.assert_allclose(t, ref, atol=1e-3)


def test_choose_dimension_keeps_the_smallest_dimension_on_a_one_dimensional_matrix():
    dim, error = choose_dimension(planted(60, 400, 6), (1, 3))
    assert dim == 1 and 0 < error < 0.05


def _plan(task, cls, **options):
    return cls(**{**FAST, **options}).plan(task)


def test_irt_estimates_are_consistent_and_p_irt_exact_at_full_budget():
    Y = planted(50, 300, 7)
    task = EstimationTask(Y[:40], 30, seed=1)
    B = Y[40:]
    irt, pirt, gpirt = (_plan(task, c) for c in (IRTEstimator, PIRT, GPIRT))
    assert np.array_equal(irt.items, pirt.items) and np.array_equal(irt.items, gpirt.items)
    e_irt, e_pirt, e_gp = (p.estimate(B[:, p.items]) for p in (irt, pirt, gpirt))
    np.testing.assert_allclose(e_irt.accuracy, e_irt.per_sample.mean(axis=1), rtol=1e-5)
    unseen = np.setdiff1d(np.arange(300), irt.items)
    lam = 30 / 300  # eq. 3.3
    by_hand = lam * B[:, irt.items].mean(axis=1) + (1 - lam) * e_irt.per_sample[:, unseen].mean(axis=1)
    np.testing.assert_allclose(e_pirt.accuracy, by_hand, rtol=1e-5)
    model = gpirt.model
    b2 = model.validation_error**2
    mix = b2 / (b2 + model.variance / (4 * 30))  # eq. 3.4 with the paper's code's v / (4 n') for anchors
    assert gpirt.mixing == pytest.approx(mix)
    sample = B[:, gpirt.items] @ gpirt.weights
    np.testing.assert_allclose(e_gp.accuracy, mix * sample + (1 - mix) * e_pirt.accuracy, rtol=1e-6)
    full = _plan(EstimationTask(Y[:40], 300), PIRT, items="random")
    np.testing.assert_allclose(full.estimate(B[:, full.items]).accuracy, B.mean(axis=1))


def test_p_irt_with_perfect_predictions_equals_the_truth():
    b = np.repeat(np.linspace(-2, 2, 10), 4)  # 1-D, steep items (P is the step 1[theta > b]), 4 per difficulty
    model = IRTModel(np.full((40, 1), 200.0), 200.0 * b, 0.01, 0.2)
    items = np.arange(0, 40, 4)
    truth = (np.array([[-1.0], [0.5]]) > b[None, :]).astype(np.uint8)
    plan = _IRTPlan(items, model, "p-irt", np.full(10, 0.1), 0.0)
    np.testing.assert_allclose(plan.estimate(truth[:, items]).accuracy, truth.mean(axis=1), atol=1e-6)


def test_random_items_option_uses_the_shared_draw():
    Y = planted(40, 200, 8)
    task = EstimationTask(Y, 20, seed=3)
    assert np.array_equal(_plan(task, GPIRT, items="random").items, task.random_items)


def test_irt_methods_beat_random_mean_on_a_planted_matrix():
    Y = planted(200, 2000, 9)
    errors = {name: [] for name in ("random-mean", "irt", "p-irt", "gp-irt")}
    for seed in range(4):
        targets = np.random.default_rng(seed).choice(200, 40, replace=False)
        source, B = np.delete(Y, targets, axis=0), Y[targets]
        task = EstimationTask(source, 40, seed=seed)
        for name in errors:
            plan = estimator(name, **(FAST if "irt" in name else {})).plan(task)
            errors[name].append(np.abs(plan.estimate(B[:, plan.items]).accuracy - B.mean(axis=1)).mean())
    base = np.mean(errors["random-mean"])
    for name in ("irt", "p-irt", "gp-irt"):  # the paper's gain; plain anchor points do not beat it here
        assert np.mean(errors[name]) < base, (name, errors)


def test_bad_input_is_refused_in_plain_words():
    with pytest.raises(ValueError, match="0 \\(wrong\\) or 1"):
        AnchorPoints().plan(EstimationTask(np.full((3, 10), 2, np.uint8), 2))
    with pytest.raises(ValueError, match="items must be one of"):
        IRTEstimator(items="adaptive")
    with pytest.raises(ValueError, match="budget"):
        EstimationTask(np.zeros((3, 10), np.uint8), 11)
    plan = AnchorPoints().plan(EstimationTask(planted(10, 30, 1), 5))
    with pytest.raises(ValueError, match="one row of 5 values"):
        plan.estimate(np.zeros((2, 4), np.uint8))
