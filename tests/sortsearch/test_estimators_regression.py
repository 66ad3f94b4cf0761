"""Regression estimators (ridge, ridge-anchors, aipw, disco, pca-impute): each formula against scikit-learn,
scipy or a brute force, the identities the papers state, and their error against random-mean on a planted
item-response matrix."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import entropy
from sklearn.decomposition import PCA
from sklearn.linear_model import Ridge as SkRidge
from sklearn.linear_model import RidgeCV

from lifelong.sortsearch.estimators.base import EstimationTask, estimator
from lifelong.sortsearch.estimators.linalg import fit_on_components, fit_ridge, principal_components
from lifelong.sortsearch.estimators.regression import (
    AIPW,
    Disco,
    PCAImpute,
    Ridge,
    RidgeAnchors,
    disagreement_order,
    imputed_accuracy,
)


def planted(m: int, n: int, seed: int) -> np.ndarray:
    """theta ~ N(0, 1) per model, b ~ N(0, 1.5) per sample, P(correct) = sigmoid(theta - b)."""
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1, m), rng.normal(0, 1.5, n)
    return (rng.random((m, n)) < 1 / (1 + np.exp(b[None, :] - theta[:, None]))).astype(np.uint8)


def split(R: np.ndarray, seed: int, share: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(R.shape[0])
    cut = round(share * R.shape[0])
    return R[np.sort(perm[cut:])], R[np.sort(perm[:cut])]


@pytest.mark.parametrize("shape", [(40, 8), (15, 30)])
def test_fit_ridge_matches_sklearn_ridgecv_and_ridge(shape):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, shape).astype(float)
    y = X @ rng.normal(size=shape[1]) + rng.normal(0, 0.5, shape[0])
    ours, theirs = fit_ridge(X, y), RidgeCV().fit(X, y)  # RidgeCV's defaults: alphas 0.1, 1, 10, leave-one-out
    assert ours.alpha == theirs.alpha_
    np.testing.assert_allclose(ours.coef[:, 0], theirs.coef_, atol=1e-9)
    np.testing.assert_allclose(ours.intercept[0], theirs.intercept_, atol=1e-9)
    Y = np.stack([y, -2 * y + 1], axis=1)
    fixed, sk = fit_ridge(X, Y, (10.0,)), SkRidge(alpha=10.0).fit(X, Y)
    np.testing.assert_allclose(fixed.predict(X), sk.predict(X), atol=1e-9)


def test_fit_ridge_leave_one_out_choice_matches_sklearn_on_few_rows():
    """Few rows make the intercept's share of each leverage (1/rows) decide the penalty."""
    for seed in range(30):
        rng = np.random.default_rng(seed)
        X = rng.integers(0, 2, [(6, 3), (8, 20), (12, 5)][seed % 3]).astype(float)
        y = rng.random(X.shape[0])
        assert fit_ridge(X, y).alpha == RidgeCV().fit(X, y).alpha_


def test_principal_components_match_sklearn_pca():
    R = planted(30, 500, 2)
    mean, comps, sing = principal_components(R, 5)
    pca = PCA(n_components=5, svd_solver="full").fit(R.astype(float))
    np.testing.assert_allclose(mean, pca.mean_, atol=1e-12)
    np.testing.assert_allclose(sing, pca.singular_values_, rtol=1e-8)
    np.testing.assert_allclose(np.abs(comps @ pca.components_.T), np.eye(5), atol=1e-6)  # same axes up to sign


def test_fit_on_components_is_the_fixed_point_of_iterative_imputation():
    R = planted(40, 300, 3)
    mean, comps, _ = principal_components(R[:30], 4)
    items = np.sort(np.random.default_rng(0).choice(300, 40, replace=False))
    row = R[35].astype(float)
    Z = fit_on_components(row[items][None, :], items, mean, comps)
    filled = mean.copy()  # brute force: fill the unseen cells, reconstruct, repeat (components held fixed)
    filled[items] = row[items]
    for _ in range(3000):
        recon = mean + (filled - mean) @ comps.T @ comps
        filled = recon.copy()
        filled[items] = row[items]
    np.testing.assert_allclose(mean + Z[0] @ comps, recon, atol=1e-6)
    assert imputed_accuracy(row[items][None, :], Z, items, mean, comps)[0] == pytest.approx(filled.mean(), abs=1e-6)


def test_ridge_is_sklearn_ridgecv_from_outcomes_at_the_draw_to_accuracy():
    source, targets = split(planted(120, 800, 4), 0)
    task = EstimationTask(source, 30, seed=3)
    plan = Ridge().plan(task)
    np.testing.assert_array_equal(plan.items, task.random_items)
    sk = RidgeCV().fit(source[:, plan.items].astype(float), source.mean(axis=1))
    expected = np.clip(sk.predict(targets[:, plan.items].astype(float)), 0, 1)
    np.testing.assert_allclose(plan.estimate(targets[:, plan.items]).accuracy, expected, atol=1e-9)


def test_aipw_is_per_target_sklearn_ridge_in_zhang_et_als_form():
    source, targets = split(planted(60, 400, 5), 1)
    task = EstimationTask(source, 40, seed=2)
    est = AIPW().plan(task).estimate(targets[:, task.random_items])
    rest = np.setdiff1d(np.arange(400), task.random_items)
    for t, row in enumerate(targets):
        sk = SkRidge(alpha=10.0).fit(source[:, task.random_items].T, row[task.random_items])
        on, off = sk.predict(source[:, task.random_items].T), sk.predict(source[:, rest].T)
        zhang = row[task.random_items].mean() + (off.mean() - on.mean()) / (1 + 40 / rest.size)
        assert est.accuracy[t] == pytest.approx(np.clip(zhang, 0, 1), abs=1e-9)
        np.testing.assert_allclose(est.per_sample[t], np.clip(sk.predict(source.T), 0, 1), atol=1e-5)


@pytest.mark.parametrize("method", [AIPW(), PCAImpute(rank=3)])
def test_exact_when_every_sample_is_observed(method):
    source, targets = split(planted(40, 200, 6), 2)
    task = EstimationTask(source, 200)
    plan = method.plan(task)
    est = plan.estimate(targets[:, plan.items])
    np.testing.assert_allclose(est.accuracy, targets.mean(axis=1), atol=1e-9)


def test_pca_impute_per_sample_keeps_observed_cells_and_accuracy_averages_all_cells():
    source, targets = split(planted(80, 600, 7), 3)
    task = EstimationTask(source, 60, seed=1)
    plan = PCAImpute(rank=4).plan(task)
    est = plan.estimate(targets[:, plan.items])
    np.testing.assert_array_equal(est.per_sample[:, plan.items], targets[:, plan.items])
    mean, comps, _ = principal_components(source, 4)
    Z = fit_on_components(targets[:, plan.items], plan.items, mean, comps)
    full = mean + Z @ comps
    full[:, plan.items] = targets[:, plan.items]
    np.testing.assert_allclose(est.accuracy, np.clip(full.mean(axis=1), 0, 1), atol=1e-9)


def test_pca_impute_rank_is_the_least_held_out_error_computed_with_sklearn():
    source = planted(80, 600, 8)
    task = EstimationTask(source, 50, seed=4)
    method = PCAImpute()
    rank, errors = method.choose_rank(source, task.random_items, task.rng(method.name))
    perm = task.rng(method.name).permutation(80)
    val, train = source[perm[:20]], source[perm[20:]]
    for k, err in errors.items():
        pca = PCA(n_components=k, svd_solver="full").fit(train.astype(float))
        A = pca.components_[:, task.random_items].T
        Z = np.linalg.lstsq(A, (val[:, task.random_items] - pca.mean_[task.random_items]).T, rcond=None)[0].T
        full = pca.mean_ + Z @ pca.components_
        full[:, task.random_items] = val[:, task.random_items]
        assert err == pytest.approx(np.mean(np.abs(full.mean(axis=1) - val.mean(axis=1))), abs=1e-9)
    assert sorted(errors) == [2, 5, 10, 20] and errors[rank] == min(errors.values())


def test_disco_picks_the_items_of_largest_jensen_shannon_divergence():
    source = planted(50, 500, 9)
    task = EstimationTask(source, 40, seed=5)
    plan = Disco(predictor="ridge").plan(task)
    onehot = np.stack([source, 1 - source], axis=-1).astype(float)  # [models, items, 2]: each model's prediction
    jsd = entropy(onehot.mean(axis=0), axis=-1) - entropy(onehot, axis=-1).mean(axis=0)
    chosen = np.zeros(500, bool)
    chosen[plan.items] = True
    assert jsd[chosen].min() >= jsd[~chosen].max() - 1e-12
    assert len(set(disagreement_order(source, np.random.default_rng(0))[:40])) == 40


def test_disco_ridge_predictor_is_the_ridge_regression_on_its_items():
    source, targets = split(planted(100, 500, 10), 4)
    plan = Disco(predictor="ridge").plan(EstimationTask(source, 25, seed=6))
    sk = RidgeCV().fit(source[:, plan.items].astype(float), source.mean(axis=1))
    expected = np.clip(sk.predict(targets[:, plan.items].astype(float)), 0, 1)
    np.testing.assert_allclose(plan.estimate(targets[:, plan.items]).accuracy, expected, atol=1e-9)


def test_registered_names_build_these_classes():
    for name, cls in [("ridge", Ridge), ("ridge-anchors", RidgeAnchors), ("aipw", AIPW), ("disco", Disco)]:
        assert isinstance(estimator(name), cls)
    assert isinstance(estimator("pca-impute", rank=3), PCAImpute)


@pytest.mark.parametrize("name", ["ridge", "aipw", "disco", "pca-impute"])
def test_beats_random_mean_on_a_planted_item_response_matrix(name):
    """Zhang et al. 2025 (random split) and Rubinstein et al. 2025 find these beat the plain sample mean."""
    errors = {name: [], "random-mean": []}
    for seed in range(6):
        source, targets = split(planted(240, 2000, 100 + seed), seed)
        task = EstimationTask(source, 80, seed=seed)
        truth = targets.mean(axis=1)
        for method in errors:
            plan = estimator(method).plan(task)
            errors[method].append(np.abs(plan.estimate(targets[:, plan.items]).accuracy - truth).mean())
    assert np.mean(errors[name]) < 0.9 * np.mean(errors["random-mean"])


def test_ridge_anchors_regresses_on_tinybenchmarks_anchor_items():
    source, targets = split(planted(80, 400, 11), 5)
    task = EstimationTask(source, 20, seed=7)
    plan = RidgeAnchors().plan(task)
    from lifelong.sortsearch.estimators.tiny import anchor_items

    items, _ = anchor_items(source, 20, task.rng("ridge-anchors"))
    np.testing.assert_array_equal(plan.items, items)
    sk = RidgeCV().fit(source[:, items].astype(float), source.mean(axis=1))
    expected = np.clip(sk.predict(targets[:, items].astype(float)), 0, 1)
    np.testing.assert_allclose(plan.estimate(targets[:, items]).accuracy, expected, atol=1e-9)


def test_bad_input_gets_plain_errors():
    source = planted(20, 100, 12)
    plan = AIPW().plan(EstimationTask(source, 10))
    with pytest.raises(ValueError, match="0 \\(wrong\\) or 1"):
        plan.estimate(np.full((2, 10), 2))
    with pytest.raises(ValueError, match="one row of 10 values"):
        plan.estimate(np.zeros((2, 9), np.uint8))
    with pytest.raises(ValueError, match="budget must be between 1 and the 100"):
        EstimationTask(source, 101)
    bad = source.copy()
    bad[0, 0] = 3
    for method in (Ridge(), AIPW(), Disco(), PCAImpute()):
        with pytest.raises(ValueError, match="0 \\(wrong\\) or 1 \\(correct\\) only"):
            method.plan(EstimationTask(bad, 10))
    with pytest.raises(ValueError, match="at least 2 source models"):
        Ridge().plan(EstimationTask(source[:1], 10))
    with pytest.raises(ValueError, match="'forest' or 'ridge'"):
        Disco(predictor="knn")
    with pytest.raises(ValueError, match="max_models must be at least 2"):
        AIPW(max_models=1).plan(EstimationTask(source, 10))
